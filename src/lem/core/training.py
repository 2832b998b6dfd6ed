"""Training, for every stage that trains: pre-training (`lem.pretrain`), sentiment (`lem.sentiment`), NER
(`lem.annotate.hf_ner`) and NMT (`lem.nmt`).

One place owns what they share:
- the settings every trainer has (`TrainingSettings`: epochs, batch_size, learning_rate, weight_decay,
  precision), which each trainer's settings extend with its own defaults;
- device, precision, threads and seeds (`pick_device`, `precision_flags`, `set_threads`, `seed_everything`);
- the checkpoint policy (`CheckpointPolicy`): pre-training evaluates and saves on the `Schedule` derived
  from the stage's real step count (`training_schedule`) and keeps the best and the last checkpoints;
  sentiment and NER evaluate every epoch and end with the best epoch by their validation metric;
- the Hugging Face `TrainingArguments` (`training_arguments`) and `Trainer` (`make_trainer`);
- saving a trained model (`save_model_dir`): safetensors, the tokenizer, the training arguments as JSON
  (never a pickled training_args.bin).

And what makes masked-LM training fast and reproducible:
- the masked-LM loss on the labelled positions only (`loss_positions: labelled`): the encoder's hidden
  states of the positions with a label are gathered *before* the LM head, so the head (hidden x 250k for
  XLM-R) runs on ~15 % of the positions; cross-entropy in float32, the same mean over labelled positions
  as the full head's loss;
- the static step (`gathered_positions_loss`, with `lem.masking.collate.static_batch`'s batches, on a GPU by
  default: `lem.pretrain.TrainSettings.static_shapes`): every batch the same shape, the labelled positions
  in a fixed-size per-row buffer, the 4-D padding mask, no host synchronisation per step (`no_step_sync`),
  so `torch.compile` (`compile_mode`, "reduce-overhead": CUDA graphs) captures one graph; the same loss;
- training batches drawn by `BatchIndexSampler`: each batch carries its global index (epoch x batches per
  epoch + position), from which the masking seed derives (`lem.masking.collate.BatchSeededCollator`), so masks do
  not depend on DataLoader workers, on a resume, or on the number of processes;
- data parallelism (torchrun): `batch_size` is the global batch; every process draws the same global batch,
  masks it whole and keeps its share of the rows (`RankShard`), and the loss is normalised by the labelled
  positions of the whole global batch, so N processes take the same optimizer steps on the same batches
  with the same masks as one process (up to float summation order, and dropout's per-process randomness).
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import subprocess
import sys
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lem.core.settings import Settings, SettingsError

log = logging.getLogger("lem.core.training")

PRECISIONS = ("auto", "fp32", "fp16", "bf16")
LOSS_POSITIONS = ("labelled", "all")
KEPT_CHECKPOINTS = 2


# --- the settings every trainer shares ----------------------------------------------------------------------


@dataclass(frozen=True)
class TrainingSettings(Settings):
    """The knobs of every trainer, checked once: the settings of pre-training (`lem.pretrain.TrainSettings`),
    sentiment (`lem.sentiment.SentimentSettings`), NER (`lem.annotate.hf_ner.TrainNERSettings`) and NMT
    (`lem.nmt.settings.NMTSettings`) extend it, each keeping its own defaults where they differ (a subclass
    overrides a default). A knob that only some trainers read (max_steps, warmup, max_length, seed) is
    declared by those, so no trainer accepts a key it would ignore."""

    SECTION = "training settings"

    epochs: float = 1.0
    batch_size: int = 32
    learning_rate: float = 5e-5
    weight_decay: float = 0.0
    precision: str = "auto"  # auto (bf16/fp16 autocast on a GPU, fp32 on the CPU) | fp32 | fp16 | bf16

    def validate(self) -> None:
        if self.epochs <= 0:
            raise self.refused("epochs", "a number > 0")
        if self.batch_size < 1:
            raise self.refused("batch_size", "an integer >= 1")
        if self.learning_rate <= 0:
            raise self.refused("learning_rate", "a number > 0")
        if self.weight_decay < 0:
            raise self.refused("weight_decay", "a number >= 0")
        if self.precision not in PRECISIONS:
            raise self.refused("precision", f"one of {PRECISIONS}")


# --- device, precision, threads, seeds ------------------------------------------------------------------


def pick_device(device: str = "auto") -> str:
    """`auto`: cuda when a GPU is visible, else cpu; an explicit cuda device that is not there fails."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise SettingsError(
            f"device {device!r} asked for, but no CUDA GPU is visible (use device: auto or cpu)"
        )
    return device


def precision_flags(precision: str, device: str = "auto") -> dict[str, bool]:
    """TrainingArguments flags for `precision`: `auto` is bf16 autocast on a GPU that has it (else fp16) and
    float32 on the CPU; `fp16` / `bf16` ask for that autocast; `fp32` for neither."""
    import torch

    if precision not in PRECISIONS:
        raise ValueError(f"precision {precision!r} not in {PRECISIONS}")
    if precision == "auto":
        if not pick_device(device).startswith("cuda"):
            return {}
        return {"bf16": True} if torch.cuda.is_bf16_supported() else {"fp16": True}
    return {"fp16": precision == "fp16", "bf16": precision == "bf16"}


def set_threads(threads: int | None) -> None:
    import torch

    if threads:
        torch.set_num_threads(threads)


def seed_everything(seed: int) -> None:
    """Python's, numpy's and torch's (CPU and GPU) generators from `seed` (transformers.set_seed)."""
    from transformers import set_seed

    set_seed(int(seed))


def world_size() -> int:
    """Processes of this training run (torchrun sets WORLD_SIZE; 1 otherwise)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


# --- the schedule and the checkpoint policy -------------------------------------------------------------


@dataclass(frozen=True)
class Schedule:
    """When a training stage evaluates and what it keeps, derived from its real step count.

    `eval_every` is the configured interval (`checkpoint_every`: steps, or one epoch), shrunk so that the
    stage evaluates at least `min_evaluations` times; the final step is always evaluated (and saved), so a
    stage shorter than one interval still chooses between checkpoints. Only the best and the last
    checkpoints are kept (at most `KEPT_CHECKPOINTS`; one more exists briefly while a new one is written)."""

    steps: int  # optimizer steps of the stage
    steps_per_epoch: int
    eval_every: int
    evaluations: int  # evaluations, the final step included
    kept_checkpoints: int  # checkpoints on disk after a save (best and last)
    peak_checkpoints: int  # checkpoints on disk at most (while a new one is written)

    @property
    def eval_steps(self) -> list[int]:
        """The global steps evaluated (and saved): every `eval_every` steps, and the final step."""
        at = list(range(self.eval_every, self.steps + 1, self.eval_every))
        return at if at and at[-1] == self.steps else [*at, self.steps]


def steps_per_epoch(n_examples: int, batch_size: int, grad_accum: int = 1, world_size: int = 1) -> int:
    """Optimizer steps per epoch as the HF Trainer counts them (the last partial batch is a batch; the
    last partial accumulation is an optimizer step). `batch_size` is per process, `world_size` processes."""
    batches = math.ceil(n_examples / (batch_size * world_size))
    return max(1, math.ceil(batches / grad_accum))


def training_schedule(
    n_examples: int,
    *,
    epochs: float,
    batch_size: int,
    grad_accum: int = 1,
    max_steps: int = -1,
    checkpoint_every: int | str = "epoch",
    min_evaluations: int = 5,
    world_size: int = 1,
) -> Schedule:
    """The evaluation cadence and checkpoint count of a stage of `n_examples` training examples."""
    if n_examples < 1:
        raise ValueError(f"a training stage needs at least one example, got {n_examples}")
    per_epoch = steps_per_epoch(n_examples, batch_size, grad_accum, world_size)
    steps = max_steps if max_steps > 0 else max(1, math.ceil(epochs * per_epoch))
    interval = per_epoch if checkpoint_every == "epoch" else int(checkpoint_every)
    if interval < 1:
        raise ValueError(f"checkpoint_every must be 'epoch' or a positive number of steps, got {interval}")
    interval = max(1, min(interval, steps // max(1, min_evaluations)))
    evaluations = steps // interval + (1 if steps % interval else 0)
    kept = min(KEPT_CHECKPOINTS, evaluations)
    return Schedule(
        steps=steps,
        steps_per_epoch=per_epoch,
        eval_every=interval,
        evaluations=evaluations,
        kept_checkpoints=kept,
        peak_checkpoints=min(kept + 1, evaluations),
    )


@dataclass(frozen=True)
class CheckpointPolicy:
    """When a run evaluates and saves, what it keeps, and which model it ends with.

    `scheduled(schedule)` (pre-training): evaluate and save at `schedule.eval_steps`, full checkpoints
    (model, optimizer, scheduler, RNG and data position: resumable), the best and the last kept, the best by
    validation loss loaded at the end. `best_epoch(metric)` (sentiment, NER): evaluate and save the model
    after every epoch, keep the best and the last, end with the best by `metric`. `final()`: no evaluation,
    the last model."""

    strategy: str  # "steps" | "epoch" | "no"
    every: int | None = None  # steps between evaluations ("steps")
    metric: str | None = None  # the Trainer's metric ("eval_loss", "macro_f1", "f1")
    greater_is_better: bool = False
    keep: int = KEPT_CHECKPOINTS
    resumable: bool = True  # full checkpoints (optimizer, scheduler, RNG) rather than the model alone

    @classmethod
    def scheduled(cls, schedule: Schedule) -> CheckpointPolicy:
        return cls("steps", every=schedule.eval_every, metric="eval_loss", greater_is_better=False)

    @classmethod
    def best_epoch(cls, metric: str, greater_is_better: bool = True) -> CheckpointPolicy:
        return cls("epoch", metric=metric, greater_is_better=greater_is_better, resumable=False)

    @classmethod
    def final(cls) -> CheckpointPolicy:
        return cls("no")

    def arguments(self) -> dict[str, Any]:
        """The TrainingArguments of this policy."""
        if self.strategy == "no":
            return {"eval_strategy": "no", "save_strategy": "no"}
        args: dict[str, Any] = {
            "eval_strategy": self.strategy,
            "save_strategy": self.strategy,
            # transformers' rotation never deletes the most recent nor the best checkpoint (5.23:
            # trainer_utils.rotate_checkpoints), so 2 keeps exactly the best and the last (the last two when
            # the last is the best); a limit of 1 would also delete the last at the end of training.
            "save_total_limit": self.keep,
            "load_best_model_at_end": True,
            "metric_for_best_model": self.metric,
            "greater_is_better": self.greater_is_better,
            "save_only_model": not self.resumable,
        }
        if self.strategy == "steps":
            args.update(eval_steps=self.every, save_steps=self.every)
        return args


def scheduled_evaluation_callback(schedule: Schedule):
    """A TrainerCallback that checks the Trainer's step count against `schedule` and evaluates and saves at
    the final step (a no-op when the final step is an evaluation step anyway)."""
    from transformers import TrainerCallback

    class ScheduledEvaluation(TrainerCallback):
        def on_train_begin(self, args, state, control, **kw):
            if state.max_steps != schedule.steps:
                raise RuntimeError(
                    f"the Trainer plans {state.max_steps} steps, the schedule {schedule.steps}: "
                    "lem.core.training.training_schedule no longer counts steps as the Trainer does"
                )

        def on_step_end(self, args, state, control, **kw):
            if state.global_step >= state.max_steps:
                control.should_evaluate = True
                control.should_save = True

    return ScheduledEvaluation()


def training_arguments(
    output_dir: str | Path,
    *,
    policy: CheckpointPolicy,
    seed: int,
    batch_size: int,
    learning_rate: float,
    logging_steps: int,
    epochs: float = 1.0,
    max_steps: int = -1,
    eval_batch_size: int | None = None,
    grad_accum: int = 1,
    weight_decay: float = 0.0,
    warmup: float = 0.0,
    scheduler: str = "linear",
    precision: str = "auto",
    device: str = "auto",
    use_cpu: bool = False,
    data_seed: int | None = None,
    remove_unused_columns: bool = True,
    dataloader_num_workers: int = 0,
    compile: bool | str = False,
    average_tokens_across_devices: bool = True,
    no_step_sync: bool = False,
):
    """The Hugging Face TrainingArguments of a training run. `batch_size` and `eval_batch_size` are per
    process; `warmup` is a number of steps, or a share of them when a float below 1; fused AdamW on CUDA
    (the default optimizer elsewhere, adamw_torch_fused with torch >= 2.8, is left as it is). `compile`:
    False / "none", True / "default", or a `torch.compile` mode ("reduce-overhead": CUDA graphs).
    `no_step_sync` (the static path): no host synchronisation per step: the loss is not checked for nan/inf
    on the host at every step (`logging_nan_inf_filter`; the Trainer keeps adding it on the device and reads
    it at logging), and batches are copied to the GPU asynchronously from pinned memory."""
    from transformers import TrainingArguments

    cuda = pick_device(device).startswith("cuda") and not use_cpu
    if not cuda and world_size() > 1:
        # accelerate makes CPU processes data-parallel (gloo) only when told they are on the CPU
        use_cpu = True
    extra: dict[str, Any] = {
        "dataloader_pin_memory": cuda,  # pinned host memory means nothing without a GPU
        "ddp_find_unused_parameters": False,  # every parameter takes part: no extra graph traversal per step
    }
    if cuda:
        extra["optim"] = "adamw_torch_fused"
    if dataloader_num_workers > 0:
        extra["dataloader_persistent_workers"] = True  # no new worker processes at every epoch and evaluation
    mode = compile_mode(compile)
    if mode != "none":
        extra.update(torch_compile=True, torch_compile_mode=mode)
    if no_step_sync:
        extra["logging_nan_inf_filter"] = False
        if cuda:
            extra["accelerator_config"] = {"non_blocking": True}
    return TrainingArguments(
        output_dir=str(output_dir),
        num_train_epochs=epochs,
        max_steps=max_steps,
        per_device_train_batch_size=batch_size,
        per_device_eval_batch_size=eval_batch_size or batch_size,
        gradient_accumulation_steps=grad_accum,
        learning_rate=learning_rate,
        weight_decay=weight_decay,
        warmup_steps=warmup,
        lr_scheduler_type=scheduler,
        logging_steps=logging_steps,
        seed=seed,
        data_seed=data_seed,
        report_to="none",
        disable_tqdm=True,
        remove_unused_columns=remove_unused_columns,
        dataloader_num_workers=dataloader_num_workers,
        use_cpu=use_cpu,
        average_tokens_across_devices=average_tokens_across_devices,
        **policy.arguments(),
        **precision_flags(precision, "cpu" if use_cpu else device),
        **extra,
    )


COMPILE_MODES = ("none", "default", "reduce-overhead")


def compile_mode(value: bool | str) -> str:
    """`training.compile` as a `torch.compile` mode or "none" (a boolean of older configs: false = none,
    true = default)."""
    mode = {False: "none", True: "default"}.get(value, value) if isinstance(value, bool) else value
    if mode not in COMPILE_MODES:
        raise ValueError(f"compile {value!r} not in {COMPILE_MODES}")
    return mode


# --- training batches keyed by their global index ---------------------------------------------------------


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


# --- the masked-LM loss on the labelled positions -------------------------------------------------------


def labelled_positions_loss(head, hidden, labels, num_items=None):
    """Masked-LM loss with `head` applied to the rows of `hidden` whose label is not -100 only.

    `hidden`: (batch, length, hidden) encoder states; the loss is the float32 cross-entropy summed over the
    labelled positions divided by `num_items` (the labelled positions of the whole batch, accumulated and
    across processes, as the Trainer counts them) or by their number here: the mean over labelled
    positions, the value of the full head's loss. Returns a MaskedLMOutput whose logits are the labelled
    positions' only."""
    import torch
    import torch.nn.functional as F
    from transformers.modeling_outputs import MaskedLMOutput

    selected = labels != -100
    logits = head(hidden[selected])
    loss = F.cross_entropy(logits.float(), labels[selected], reduction="sum")
    denominator = num_items if num_items is not None else selected.sum()
    if torch.is_tensor(denominator):
        denominator = denominator.to(loss.device)
    loss = loss / (denominator.clamp(min=1) if torch.is_tensor(denominator) else max(denominator, 1))
    return MaskedLMOutput(loss=loss, logits=logits)


def _labelled_positions_forward(self, input_ids=None, attention_mask=None, labels=None, num_items_in_batch=None,
                                **kwargs):  # fmt: skip
    """The forward of a masked LM with `labelled_positions_loss` when labels are given (its own otherwise)."""
    if labels is None:
        return type(self).forward(self, input_ids=input_ids, attention_mask=attention_mask, **kwargs)
    kwargs.pop("return_dict", None)
    encoder = getattr(self, self.base_model_prefix)
    hidden = encoder(input_ids=input_ids, attention_mask=attention_mask, **kwargs)[0]
    return labelled_positions_loss(self.lm_head, hidden, labels, num_items_in_batch)


def gathered_positions_loss(head, hidden, positions, labels, num_items=None):
    """`labelled_positions_loss` in fixed shapes: `positions` (batch x K) are the columns of each row's
    labelled positions (`lem.masking.collate.static_batch`), `labels` (batch x K) their labels, -100 in the
    unused slots. The head runs on the batch x K gathered states; the cross-entropy ignores the unused slots,
    so the loss (the sum over labelled positions / `num_items`, else their number) and its gradient are
    `labelled_positions_loss`'s, with no data-dependent shape (no host synchronisation, one CUDA graph)."""
    import torch
    import torch.nn.functional as F
    from transformers.modeling_outputs import MaskedLMOutput

    picked = hidden.gather(1, positions.unsqueeze(-1).expand(-1, -1, hidden.shape[-1]))
    logits = head(picked)
    loss = F.cross_entropy(logits.float().flatten(0, 1), labels.flatten(), ignore_index=-100, reduction="sum")
    denominator = num_items if num_items is not None else (labels != -100).sum()
    if torch.is_tensor(denominator):
        denominator = denominator.to(loss.device)
    loss = loss / (denominator.clamp(min=1) if torch.is_tensor(denominator) else max(denominator, 1))
    return MaskedLMOutput(loss=loss, logits=logits)


def _gathered_positions_forward(self, input_ids=None, attention_mask=None, labels=None, masked_positions=None,
                                num_items_in_batch=None, **kwargs):  # fmt: skip
    """The forward of a masked LM on static batches: the padding mask handed to the encoder in its 4-D form
    (batch x 1 x 1 x length, True = attend), which transformers passes through as it is (no check of the
    mask's values on the host), then `gathered_positions_loss`. Without labels: the model's own forward."""
    if labels is None or masked_positions is None:
        return type(self).forward(self, input_ids=input_ids, attention_mask=attention_mask, **kwargs)
    kwargs.pop("return_dict", None)
    encoder = getattr(self, self.base_model_prefix)
    mask = attention_mask[:, None, None, :].bool() if attention_mask is not None else None
    hidden = encoder(input_ids=input_ids, attention_mask=mask, **kwargs)[0]
    return gathered_positions_loss(self.lm_head, hidden, masked_positions, labels, num_items_in_batch)


def supports_labelled_positions(model) -> bool:
    """Whether `model` is a masked LM of the encoder + `lm_head` kind (XLM-R, RoBERTa, ...)."""
    return hasattr(model, "lm_head") and hasattr(model, getattr(model, "base_model_prefix", "") or "_none_")


def use_labelled_positions_loss(model, static: bool = False) -> bool:
    """Give `model` (this object only) the forward of `labelled_positions_loss` (`static`: of
    `gathered_positions_loss`, for batches of `lem.masking.collate.static_batch`); False, and a warning, for a
    model of another kind (it keeps its full-head loss). The model's class, weights and files are unchanged;
    `restore_forward` undoes it. A forward through DDP / torch.compile wrappers reaches it as usual."""
    if not supports_labelled_positions(model):
        log.warning(
            "%s has no encoder + lm_head: the masked-LM loss is computed over every position",
            type(model).__name__,
        )
        return False
    forward = _gathered_positions_forward if static else _labelled_positions_forward
    model.forward = types.MethodType(forward, model)
    return True


def restore_forward(model) -> None:
    model.__dict__.pop("forward", None)


# --- the Trainer ------------------------------------------------------------------------------------------


@functools.cache
def _trainer_class():
    from functools import partial

    from torch.utils.data import DataLoader
    from transformers import Trainer
    from transformers.trainer_utils import seed_worker

    class LemTrainer(Trainer):
        """The HF Trainer, drawing its training batches from a `BatchIndexSampler` when given one."""

        def __init__(self, *args, train_batches: BatchIndexSampler | None = None, rng_neutral_eval: bool = False,
                     **kwargs):  # fmt: skip
            self.train_batches = train_batches
            self.rng_neutral_eval = rng_neutral_eval
            super().__init__(*args, **kwargs)

        def evaluate(self, *args, **kwargs):
            if not self.rng_neutral_eval:
                return super().evaluate(*args, **kwargs)
            state = rng_state()  # an evaluation draws from the global generators (a DataLoader's base seed)
            try:
                return super().evaluate(*args, **kwargs)
            finally:
                set_rng_state(state)

        def get_train_dataloader(self):
            if self.train_batches is None:
                return super().get_train_dataloader()
            a = self.args
            params: dict[str, Any] = {
                "batch_sampler": self.train_batches,
                "collate_fn": RankShard(self.data_collator, a.process_index, a.world_size),
                "num_workers": a.dataloader_num_workers,
                "pin_memory": a.dataloader_pin_memory,
            }
            if a.dataloader_num_workers > 0:
                params.update(
                    persistent_workers=a.dataloader_persistent_workers,
                    prefetch_factor=a.dataloader_prefetch_factor,
                    multiprocessing_context=a.dataloader_multiprocessing_context,
                    worker_init_fn=partial(seed_worker, num_workers=a.dataloader_num_workers, rank=a.process_index),
                )  # fmt: skip
            dataset = KeyedRows(self.train_dataset, self.train_batches)
            loader = self.accelerator.prepare(DataLoader(dataset, **params))
            # accelerate deals the batches of a multi-process run round-robin (BatchSamplerShard); every
            # process takes the whole global batch here, and RankShard its rows: make the wrapper a
            # passthrough, as the Trainer does for its own rank-aware sampler.
            wrapper = getattr(loader, "batch_sampler", None)
            if wrapper is not None and getattr(wrapper, "batch_sampler", None) is self.train_batches:
                wrapper.num_processes = 1
                wrapper.process_index = 0
            return loader

    return LemTrainer


def rng_state() -> dict[str, Any]:
    import random

    import numpy as np
    import torch

    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    import random

    import numpy as np
    import torch

    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state:
        torch.cuda.set_rng_state_all(state["cuda"])


def make_trainer(
    *,
    model,
    args,
    train_dataset,
    data_collator,
    tokenizer,
    eval_dataset=None,
    callbacks: Sequence = (),
    compute_metrics=None,
    train_batches: BatchIndexSampler | None = None,
    loss_positions: str = "all",
    rng_neutral_eval: bool = False,
    static_positions: bool = False,
):
    """The Trainer of a training run. `loss_positions="labelled"`: a masked LM's loss on the labelled
    positions only (`use_labelled_positions_loss`), normalised over the whole (accumulated, global) batch;
    `"all"`: the model's own loss, averaged over gradient-accumulation steps. `rng_neutral_eval`: every
    evaluation leaves the random generators as it found them, so evaluating does not change the training
    (dropout draws) that follows it. `static_positions`: the batches are `lem.masking.collate.static_batch`'s
    (labelled positions in a fixed-size buffer), the loss `gathered_positions_loss` (needs "labelled")."""
    if loss_positions not in LOSS_POSITIONS:
        raise ValueError(f"loss_positions {loss_positions!r} not in {LOSS_POSITIONS}")
    from lem.core.interrupt import checkpoint_on_interrupt

    if static_positions and loss_positions != "labelled":
        raise ValueError("static_positions needs loss_positions='labelled'")
    labelled = loss_positions == "labelled" and use_labelled_positions_loss(model, static=static_positions)
    if static_positions and not labelled:
        raise ValueError(f"static_positions: {type(model).__name__} has no encoder + lm_head")
    trainer = _trainer_class()(
        model=model,
        args=args,
        train_dataset=train_dataset,
        eval_dataset=eval_dataset,
        data_collator=data_collator,
        processing_class=tokenizer,
        compute_metrics=compute_metrics,
        callbacks=[
            *callbacks,
            checkpoint_on_interrupt(),
        ],  # Ctrl-C: a checkpoint, then stop (lem.core.interrupt)
        train_batches=train_batches,
        rng_neutral_eval=rng_neutral_eval,
    )
    # labelled: the loss is divided by the labelled positions of all accumulated batches of the step
    # (num_items_in_batch); all: each batch's own mean, which the Trainer divides by the accumulation steps
    trainer.model_accepts_loss_kwargs = labelled or trainer.model_accepts_loss_kwargs
    trainer.loss_is_scaled_for_ga = labelled
    return trainer


# --- saving -----------------------------------------------------------------------------------------------


def save_model_dir(directory: str | Path, model, tokenizer, args=None) -> None:
    """Write a trained model into `directory`: weights as safetensors, config, tokenizer, and the training
    arguments as `training_args.json` (Trainer.save_model would add a pickled training_args.bin)."""
    directory = Path(directory)
    model = getattr(model, "module", model)  # DDP
    model = getattr(model, "_orig_mod", model)  # torch.compile
    model.save_pretrained(str(directory), safe_serialization=True)
    if tokenizer is not None:
        tokenizer.save_pretrained(str(directory))
    if args is not None:
        (directory / "training_args.json").write_text(args.to_json_string(), encoding="utf-8")


def write_json_lines(path: str | Path, records: Sequence[dict]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r) + "\n")


# --- launching data-parallel runs ---------------------------------------------------------------------------


def nproc_per_node(value: str | int | None) -> int:
    """Processes for a training job: an integer, or `gpus` (one per visible CUDA GPU, at least 1)."""
    if value in (None, "", 1, "1"):
        return 1
    if value == "gpus":
        import torch

        return max(1, torch.cuda.device_count())
    n = int(value)
    if n < 1:
        raise ValueError(f"nproc per node must be >= 1 or 'gpus', got {value!r}")
    return n


def launch_command(module_argv: Sequence[str], nproc: int) -> list[str]:
    """The command that runs `python -m lem.cli <module_argv>` as `nproc` data-parallel processes (torchrun,
    standalone: one node, a free rendezvous port)."""
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
            "-m", "lem.cli", *module_argv]  # fmt: skip


def relaunch(module_argv: Sequence[str], nproc: int) -> int | None:
    """Run this command under torchrun with `nproc` processes unless it already is one of them or `nproc` is
    1; returns the exit status, or None when the caller should train in this process."""
    if nproc <= 1 or "LOCAL_RANK" in os.environ:
        return None
    cmd = launch_command(module_argv, nproc)
    log.info("data-parallel training on %d processes: %s", nproc, " ".join(cmd))
    return subprocess.call(cmd)
