"""Training batches keyed by their global index (`lem.core.training`): `BatchIndexSampler` draws them in the
Trainer's own order, each row carries its batch's index (`BATCH_KEY`, from which the masking seed derives:
`lem.masking.collate.BatchSeededCollator`), and in a data-parallel run every process masks the whole global
batch and keeps its share of the rows (`RankShard`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

# Imported inside functions: torch, transformers and pyarrow (planning imports this package, with the training
# stages' settings, and needs none of them)


class BatchIndexSampler:
    """Batches of `(global batch index, row)` keys, in the order of the Trainer's own random sampler.

    Epoch e shuffles the rows with a torch.Generator seeded `seed + e` (accelerate's SeedableRandomSampler,
    which the Trainer uses with `data_seed`), or groups them by length (`lengths`: megabatches of similar
    lengths, transformers' `get_length_grouped_indices`, with the same generator), and cuts the order into
    batches of `rows_per_batch`; batch b of epoch e has the global index `e * len(self) + b`, whatever
    the batches skipped after a resume. Every process of a data-parallel run draws the same batches (the
    whole global batch: `RankShard` keeps each process's rows). It has no `batch_size` attribute on purpose:
    accelerate's `BatchSamplerShard` then passes its batches through unchanged.
    """

    def __init__(self, n_rows: int, rows_per_batch: int, seed: int, lengths: Sequence[int] | None = None,
                 group_size: int | None = None):  # fmt: skip
        if n_rows < 1 or rows_per_batch < 1:
            raise ValueError(f"BatchIndexSampler: {n_rows} rows in batches of {rows_per_batch}")
        self.n_rows = int(n_rows)
        self.rows_per_batch = int(rows_per_batch)
        self.seed = int(seed)
        self.lengths = None if lengths is None else list(lengths)
        self.group_size = int(group_size or rows_per_batch)
        self.epoch = 0

    def __len__(self) -> int:
        return math.ceil(self.n_rows / self.rows_per_batch)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def order(self, epoch: int) -> list[int]:
        """The rows of `epoch` in the order they are drawn."""
        import torch

        generator = torch.Generator()
        generator.manual_seed(self.seed + int(epoch))
        if self.lengths is None:
            return torch.randperm(self.n_rows, generator=generator).tolist()
        from transformers.trainer_pt_utils import get_length_grouped_indices

        return list(get_length_grouped_indices(self.lengths, self.group_size, generator=generator))

    def __iter__(self):
        epoch, n, size = self.epoch, len(self), self.rows_per_batch
        order = self.order(epoch)
        for b in range(n):
            yield [(epoch * n + b, i) for i in order[b * size : (b + 1) * size]]
        self.epoch = epoch + 1  # as SeedableRandomSampler: the next pass is the next epoch unless set


BATCH_KEY = "_batch"  # the global index of the training batch a row belongs to (set by the data loader)


class KeyedRows:
    """The rows of a dataset fetched by `(batch index, row)` keys; each row carries its batch index
    (`BATCH_KEY`, from which `lem.masking.collate.BatchSeededCollator` seeds its masks). `set_epoch` reaches the sampler (accelerate calls it on the dataset when the
    batch sampler is wrapped, as after a resume)."""

    def __init__(self, data, sampler: BatchIndexSampler | None = None):
        self.data = data
        self.sampler = sampler

    def __len__(self) -> int:
        return len(self.data)

    def set_epoch(self, epoch: int) -> None:
        if self.sampler is not None:
            self.sampler.set_epoch(epoch)

    def _tag(self, rows: list[dict], keys) -> list[dict]:
        for row, (b, _) in zip(rows, keys, strict=True):
            row[BATCH_KEY] = int(b)
        return rows

    def __getitem__(self, key) -> dict:
        return self._tag([dict(self.data[int(key[1])])], [key])[0]

    def __getitems__(self, keys) -> list[dict]:
        idx = [int(i) for _, i in keys]
        rows = (
            self.data.__getitems__(idx) if hasattr(self.data, "__getitems__") else [self.data[i] for i in idx]
        )
        return self._tag([dict(r) for r in rows], keys)


def shard_batch(batch: dict, rank: int, world: int) -> dict:
    """Process `rank`'s share of a collated global batch: ceil(n / world) consecutive rows; a share short of
    rows (the last, partial batch) is filled with copies of the batch's first row without labels, which add
    nothing to the loss nor to the gradient."""
    import torch

    n = int(batch["input_ids"].shape[0])
    per = -(-n // world)
    lo, hi = min(n, rank * per), min(n, (rank + 1) * per)
    out = {k: v[lo:hi] for k, v in batch.items()}
    short = per - (hi - lo)
    if short:
        fill = {k: v[:1].expand(short, *v.shape[1:]).clone() for k, v in batch.items()}
        fill["labels"] = torch.full_like(fill["labels"], -100)
        out = {k: torch.cat([out[k], fill[k]]) for k in out}
    return out


class RankShard:
    """The training collate function of one process: collates (masks) the whole global batch, keeps its
    process's rows (`shard_batch`); rows without a batch index (pre-masked validation rows) pass through."""

    def __init__(self, collate: Callable[[list[dict]], dict], rank: int = 0, world: int = 1):
        self.collate = collate
        self.rank = int(rank)
        self.world = int(world)

    def __call__(self, rows: list[dict]) -> dict:
        batch = self.collate(rows)
        if self.world == 1 or BATCH_KEY not in rows[0]:
            return batch
        return shard_batch(batch, self.rank, self.world)


def row_lengths(dataset, column: str = "input_ids") -> list[int]:
    """Lengths of a list column (from Arrow, without decoding the rows when the dataset allows)."""
    try:
        import pyarrow.compute as pc

        if getattr(dataset, "_indices", None) is None:
            return pc.list_value_length(dataset.data.column(column)).to_pylist()
    except (AttributeError, KeyError, TypeError):
        pass
    return [len(r[column]) for r in dataset]
