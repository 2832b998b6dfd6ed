"""Masking collators: Linguistic Entity Masking (LEM) and the standard MLM/TLM baseline.

LEM, per example (docs/lem-method.md, "Masking, exactly", with the authors' bugs removed):
1. Words are the SentencePiece words of `lem.features` (`word_ids`, -1 = special token), each with its
   flags (`word_flags`, the bits of `lem.core.entities`: 1 = NE, 2 = NOUN, 4 = VERB). A word is an *entity
   word* when it carries any of the enabled types (`entity_types`, any subset of ne / noun / verb).
2. Budget: `n = max(1, round(count * budget))` masked positions, where `count` follows `count_rule`:
   `non_special` (default) counts the text tokens only, `all_tokens` also counts `<s>`/`</s>` as the
   authors did; `rounding` is `half_up` (default: `floor(x + 0.5)`) or `half_even` (Python's `round`, as
   the authors' collator, on the same float64 product). The default keeps the budget at exactly 15 % of
   the text whether an example is a sentence (2 specials) or a pair (4 specials), the same base the
   standard baseline draws its 15 % from; `all_tokens` + `half_even` is the authors' budget.
   In one-subword mode `n` is capped at the number of words (a word is never counted twice).
   `budget_rule: binomial` (an ablation) instead draws `n ~ Binomial(count, budget)` per example, the
   number of positions the standard baseline's per-token draw masks (0 included).
3. Words are visited in a random order, entity words first (pass 1), then the other words (pass 2, which
   fills what pass 1 left of the budget); the first `n` words are chosen. Pass 1 alone fills the budget
   whenever there are at least `n` entity words. `other_share` (an ablation; one-subword mode) reserves
   round(other_share * n) of the budget for pass 2's words whenever the example has them, so the other
   words (digits, dates, function words) are masked at a fixed share even when entity words abound.
4. One-subword mode (default): one subword, uniform within the chosen word, per chosen word, so exactly
   `n` positions are masked. Whole-word mode: all subwords of a chosen word; words are taken until the
   budget is reached, so the last word can overshoot it by at most its length - 1.
5. Replacement: `mask_prob` `<mask>`, `random_prob` a random non-special token, the rest unchanged; loss
   (`labels`) on chosen positions only. Special and padding tokens are never chosen.
Everything is vectorised over the padded batch with numpy (no per-token Python loop); the randomness
comes from one seeded `numpy.random.Generator` per collator (per DataLoader worker: seed + worker id).

The baseline (`strategy: standard`) is transformers' `DataCollatorForLanguageModeling`, seeded.
Both collators pass rows that already carry `labels` (from `fixed_masked_examples`) through, padding only,
so one collator serves training and a validation set masked once with a fixed seed.
What a collator masks in practice is measured by `lem.masking.cli` (`lem masking stats`).
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lem.core.entities import ENTITY_BITS
from lem.core.settings import Settings, SettingsError
from lem.core.training import BATCH_KEY

# Imported inside functions: torch, transformers and datasets (planning reads MaskingSettings from this module
# and needs none of them)

STRATEGIES = ("standard", "lem")
COUNT_RULES = ("non_special", "all_tokens")
ROUNDINGS = ("half_up", "half_even")
LEM_ONLY = ("entity_types", "budget", "count_rule", "rounding", "whole_word", "other_share", "budget_rule")
BUDGET_RULES = ("fixed", "binomial")
STANDARD_ONLY = ("mlm_probability",)  # refused by `lem`


@dataclass(frozen=True)
class MaskingSettings(Settings):
    """How a training batch is masked; `from_dict` rejects unknown keys, and keys its strategy ignores."""

    SECTION = "masking settings"

    strategy: str = "lem"  # "lem" | "standard" (DataCollatorForLanguageModeling)
    entity_types: tuple[str, ...] = ("ne", "noun", "verb")  # lem: word types pass 1 takes first
    budget: float = 0.15  # lem: masked positions per counted token
    count_rule: str = "non_special"  # lem: "non_special" | "all_tokens" (counts <s>, </s>)
    rounding: str = "half_up"  # lem: "half_up" (floor(x + 0.5)) | "half_even" (Python's round)
    whole_word: bool = False  # lem: mask every subword of a chosen word instead of one
    other_share: float = 0.0  # lem: share of the budget reserved for non-entity words (ablation)
    budget_rule: str = (
        "fixed"  # lem: "fixed" (n from count_rule/rounding) | "binomial" (n ~ B(count, budget))
    )
    mask_prob: float = 0.8  # share of masked positions replaced by <mask>
    random_prob: float = 0.1  # share replaced by a random token; the rest stay unchanged
    mlm_probability: float = 0.15  # standard: per-token masking probability

    @classmethod
    def prepare(cls, data: dict[str, Any]) -> dict[str, Any]:
        """A key its strategy does not use (`mlm_probability` under `lem`, `entity_types`/`budget`/
        `count_rule`/`rounding`/`whole_word` under `standard`) is refused, not ignored."""
        strategy = data.get("strategy", cls.strategy)
        other = LEM_ONLY if strategy == "standard" else STANDARD_ONLY
        foreign = [k for k in other if k in data]
        if foreign and strategy in STRATEGIES:
            uses = ", ".join(n for n in cls.__dataclass_fields__ if n != "strategy" and n not in other)
            raise SettingsError(
                f"masking settings: {', '.join(f'{k}={data[k]!r}' for k in foreign)}: not used by strategy "
                f"{strategy!r} (it takes {uses}); drop it"
            )
        return data

    @classmethod
    def for_variant(cls, variant: str, **overrides: Any) -> MaskingSettings:
        """Settings of a named variant: `mlm_tlm` (standard), `lem` (all types), `lem_ne`, `lem_ne_verb`, ..."""
        if variant == "mlm_tlm":
            return cls.from_dict({"strategy": "standard", **overrides})
        parts = variant.split("_")
        if parts[0] != "lem":
            raise SettingsError(f"unknown masking variant {variant!r}: expected mlm_tlm, lem or lem_<types>")
        types = parts[1:] or list(ENTITY_BITS)
        return cls.from_dict({"strategy": "lem", "entity_types": types, **overrides})

    def validate(self) -> None:
        problems = []
        if self.strategy not in STRATEGIES:
            problems.append(f"strategy {self.strategy!r} not in {STRATEGIES}")
        bad_types = [t for t in self.entity_types if t not in ENTITY_BITS]
        if bad_types or len(set(self.entity_types)) != len(self.entity_types):
            problems.append(
                f"entity_types {list(self.entity_types)} must be distinct names from {list(ENTITY_BITS)}"
            )
        if self.count_rule not in COUNT_RULES:
            problems.append(f"count_rule {self.count_rule!r} not in {COUNT_RULES}")
        if self.rounding not in ROUNDINGS:
            problems.append(f"rounding {self.rounding!r} not in {ROUNDINGS}")
        for name in ("budget", "mask_prob", "random_prob", "mlm_probability"):
            if not 0.0 <= float(getattr(self, name)) <= 1.0:
                problems.append(f"{name} {getattr(self, name)} not in [0, 1]")
        if self.mask_prob + self.random_prob > 1.0 + 1e-9:
            problems.append(f"mask_prob + random_prob = {self.mask_prob + self.random_prob} exceeds 1")
        if not isinstance(self.whole_word, bool):
            problems.append(f"whole_word {self.whole_word!r} must be true or false")
        if not 0.0 <= float(self.other_share) <= 1.0:
            problems.append(f"other_share {self.other_share} not in [0, 1]")
        elif self.other_share > 0 and self.whole_word:
            problems.append("other_share is for one-subword mode: drop it or whole_word")
        if self.budget_rule not in BUDGET_RULES:
            problems.append(f"budget_rule {self.budget_rule!r} not in {BUDGET_RULES}")
        if problems:
            raise SettingsError("masking settings: " + "; ".join(problems))

    @property
    def entity_mask(self) -> int:
        return int(np.bitwise_or.reduce([ENTITY_BITS[t] for t in self.entity_types] or [0]))

    def canonical(self) -> MaskingSettings:
        """The same masking in one normal form: entity types in a fixed order, and the keys the strategy
        ignores at their defaults. Two settings mask alike exactly when their canonical forms are equal."""
        default = MaskingSettings()
        ignored = LEM_ONLY if self.strategy == "standard" else STANDARD_ONLY
        d = {**self.to_dict(), **{k: getattr(default, k) for k in ignored}}
        d["entity_types"] = [t for t in ENTITY_BITS if t in d["entity_types"]]
        d.update(
            {k: float(d[k]) for k in ("budget", "mask_prob", "random_prob", "mlm_probability", "other_share")}
        )
        d["entity_types"] = tuple(d["entity_types"])
        settings = MaskingSettings(**d)  # every key, those the strategy ignores at their defaults
        settings.validate()
        return settings


def variant_aliases(variants: dict[str, dict[str, Any] | None], order: Sequence[str]) -> dict[str, str]:
    """Map each variant in `order` with masking `variants[name]` to the first-listed variant whose masking
    is the same (`MaskingSettings.canonical`): itself, or the variant whose model it shares."""
    first: dict[MaskingSettings, str] = {}
    out = {}
    for name in order:
        key = MaskingSettings.from_dict(variants[name]).canonical()
        out[name] = first.setdefault(key, name)
    return out


def pad_rows(rows: Sequence[dict], key: str, pad: int, dtype=np.int64) -> tuple[np.ndarray, np.ndarray]:
    """Right-pad the lists `row[key]` into a (batch, longest) array; also return the lengths."""
    lens = np.fromiter((len(r[key]) for r in rows), dtype=np.int64, count=len(rows))
    flat = np.fromiter(
        itertools.chain.from_iterable(r[key] for r in rows), dtype=dtype, count=int(lens.sum())
    )
    width = int(lens.max()) if len(rows) else 0
    out = np.full((len(rows), width), pad, dtype=dtype)
    out[np.arange(width) < lens[:, None]] = flat
    return out, lens


def masking_budget(
    word_ids: np.ndarray, lens: np.ndarray, budget: float, count_rule: str, rounding: str = "half_up"
) -> np.ndarray:
    """Masked positions wanted per example: max(1, round(count * budget)); 0 for an empty example.

    `count` is the example's length (`all_tokens`) or its non-special tokens (`non_special`); `half_up`
    rounds halves up (floor(x + 0.5)), `half_even` to even, as Python's `round` does on the same float64
    product (np.rint and round agree on every float64)."""
    if count_rule not in COUNT_RULES or rounding not in ROUNDINGS:
        raise ValueError(
            f"count_rule {count_rule!r} / rounding {rounding!r}: expected {COUNT_RULES} / {ROUNDINGS}"
        )
    content = (word_ids >= 0).sum(axis=1)
    count = np.asarray(lens if count_rule == "all_tokens" else content, dtype=np.int64)
    product = count * float(budget)
    rounded = np.rint(product) if rounding == "half_even" else np.floor(product + 0.5)
    want = np.maximum(1, rounded.astype(np.int64))
    return np.where(content > 0, want, 0)


def entity_word_mask(
    word_ids: np.ndarray,
    word_flags: np.ndarray,
    lens: np.ndarray,
    settings: MaskingSettings,
    rng: np.random.Generator,
) -> np.ndarray:
    """Positions chosen by LEM (bool, batch x tokens) for padded `word_ids` and `word_flags` (batch x words)."""
    batch, width = word_ids.shape
    n_words = word_flags.shape[1]
    content = word_ids >= 0
    tok_word = np.where(content, word_ids, 0)
    if n_words == 0 or not content.any():
        return np.zeros_like(content)
    if tok_word.max() >= n_words:
        raise ValueError(f"word_ids reach {tok_word.max()} but only {n_words} word flags are given")
    rows = np.broadcast_to(np.arange(batch)[:, None], word_ids.shape)
    sizes = np.bincount((rows * n_words + tok_word)[content], minlength=batch * n_words).reshape(
        batch, n_words
    )
    valid = sizes > 0
    entity = valid & ((word_flags & settings.entity_mask) != 0)
    want = masking_budget(word_ids, lens, settings.budget, settings.count_rule, settings.rounding)
    if settings.budget_rule == "binomial":  # the baseline's per-token draw, as a count per example
        counted = lens if settings.count_rule == "all_tokens" else content.sum(axis=1)
        want = rng.binomial(np.asarray(counted, dtype=np.int64), settings.budget)
    # Pass 1 then pass 2 in one sort: entity words first, others next, padding words last; random within.
    key = rng.random((batch, n_words)) + np.where(entity, 0.0, 1.0) + np.where(valid, 0.0, 2.0)
    order = np.argsort(key, axis=1, kind="stable")
    if settings.whole_word:
        sorted_sizes = np.take_along_axis(sizes, order, axis=1)
        before = np.cumsum(sorted_sizes, axis=1) - sorted_sizes
        take_sorted = (before < want[:, None]) & (sorted_sizes > 0)
    elif settings.other_share > 0:
        # the first n_entity entity words and the first n_other other words, both in the random order
        cap = np.minimum(want, valid.sum(axis=1))
        others = (valid & ~entity).sum(axis=1)
        n_entity = np.minimum(
            entity.sum(axis=1), cap - np.minimum(others, np.floor(settings.other_share * cap + 0.5))
        )
        n_other = np.minimum(others, cap - n_entity)
        s_entity = np.take_along_axis(entity, order, axis=1)
        s_other = np.take_along_axis(valid & ~entity, order, axis=1)
        take_sorted = (s_entity & (np.cumsum(s_entity, axis=1) <= n_entity[:, None])) | (
            s_other & (np.cumsum(s_other, axis=1) <= n_other[:, None])
        )
    else:
        take_sorted = np.arange(n_words)[None, :] < np.minimum(want, valid.sum(axis=1))[:, None]
    chosen = np.zeros((batch, n_words), dtype=bool)
    np.put_along_axis(chosen, order, take_sorted, axis=1)
    in_chosen = content & np.take_along_axis(chosen, tok_word, axis=1)
    if settings.whole_word:
        return in_chosen
    # One subword per chosen word: its position within the word is floor(u * size) (words are contiguous).
    pick = np.floor(rng.random((batch, n_words)) * sizes).astype(np.int64)
    starts = content & np.concatenate(
        [np.ones((batch, 1), bool), word_ids[:, 1:] != word_ids[:, :-1]], axis=1
    )
    first = np.maximum.accumulate(np.where(starts, np.arange(width)[None, :], 0), axis=1)
    return in_chosen & (np.arange(width)[None, :] - first == np.take_along_axis(pick, tok_word, axis=1))


def replace_masked(
    input_ids: np.ndarray,
    masked: np.ndarray,
    mask_id: int,
    random_ids: np.ndarray,
    mask_prob: float,
    random_prob: float,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Apply the mask/random/keep replacement to chosen positions; labels are -100 elsewhere."""
    labels = np.where(masked, input_ids, -100)
    draw = rng.random(masked.shape)
    out = input_ids.copy()
    out[masked & (draw < mask_prob)] = mask_id
    to_random = masked & (draw >= mask_prob) & (draw < mask_prob + random_prob)
    out[to_random] = random_ids[rng.integers(0, len(random_ids), size=int(to_random.sum()))]
    return out, labels


def pad_premasked(rows: Sequence[dict], pad_id: int) -> dict:
    """Pad rows that are already masked (`input_ids`, `labels`[, `attention_mask`]) into tensors."""
    import torch

    ids, lens = pad_rows(rows, "input_ids", pad_id)
    labels, _ = pad_rows(rows, "labels", -100)
    attention = (np.arange(ids.shape[1])[None, :] < lens[:, None]).astype(np.int64)
    return {
        "input_ids": torch.from_numpy(ids),
        "attention_mask": torch.from_numpy(attention),
        "labels": torch.from_numpy(labels),
    }


def worker_seed(seed: int) -> int:
    """`seed` in the main process, `seed + worker id` inside a torch DataLoader worker."""
    try:
        from torch.utils.data import get_worker_info

        info = get_worker_info()
    except ImportError:  # pragma: no cover
        info = None
    return seed if info is None else seed + info.id


class LemCollator:
    """Pads feature rows and applies Linguistic Entity Masking; returns input_ids, attention_mask, labels."""

    def __init__(self, tokenizer, settings: MaskingSettings, seed: int):
        self.tokenizer = tokenizer
        self.settings = settings
        self.seed = int(seed)
        self.pad_id = int(tokenizer.pad_token_id)
        self.mask_id = int(tokenizer.mask_token_id)
        self.vocab_size = len(tokenizer)  # cached: len() of a big vocabulary is not free
        self.random_ids = np.setdiff1d(np.arange(self.vocab_size), np.asarray(tokenizer.all_special_ids))
        self.rng: np.random.Generator | None = None

    def with_seed(self, seed: int) -> LemCollator:
        return LemCollator(self.tokenizer, self.settings, seed)

    def reseeded(self, seed: int) -> LemCollator:
        """A copy whose generator starts from exactly `seed`, in any process or DataLoader worker (the
        vocabulary arrays are shared, not rebuilt: this is called once per training batch)."""
        fresh = copy.copy(self)
        fresh.seed = int(seed)
        fresh.rng = np.random.default_rng(int(seed))
        return fresh

    def __call__(self, rows: Sequence[dict]) -> dict:
        import torch

        if "labels" in rows[0]:
            return pad_premasked(rows, self.pad_id)
        if self.rng is None:
            self.rng = np.random.default_rng(worker_seed(self.seed))
        ids, lens = pad_rows(rows, "input_ids", self.pad_id)
        word_ids, _ = pad_rows(rows, "word_ids", -1)
        flags, _ = pad_rows(rows, "word_flags", 0, dtype=np.uint8)
        masked = entity_word_mask(word_ids, flags, lens, self.settings, self.rng)
        s = self.settings
        new_ids, labels = replace_masked(
            ids, masked, self.mask_id, self.random_ids, s.mask_prob, s.random_prob, self.rng
        )
        attention = (np.arange(ids.shape[1])[None, :] < lens[:, None]).astype(np.int64)
        return {
            "input_ids": torch.from_numpy(new_ids),
            "attention_mask": torch.from_numpy(attention),
            "labels": torch.from_numpy(labels),
        }


class StandardCollator:
    """transformers' DataCollatorForLanguageModeling (token-level random masking), seeded, extra columns dropped."""

    def __init__(self, tokenizer, settings: MaskingSettings, seed: int):
        from transformers import DataCollatorForLanguageModeling

        self.tokenizer = tokenizer
        self.settings = settings
        self.seed = int(seed)
        self.pad_id = int(tokenizer.pad_token_id)
        # Its torch.Generator is created from `seed` on the first call (seed + worker id in DataLoader workers).
        self.inner = DataCollatorForLanguageModeling(
            tokenizer,
            mlm=True,
            mlm_probability=settings.mlm_probability,
            mask_replace_prob=settings.mask_prob,
            random_replace_prob=settings.random_prob,
            seed=self.seed,
            return_tensors="pt",
        )

    def with_seed(self, seed: int) -> StandardCollator:
        return StandardCollator(self.tokenizer, self.settings, seed)

    def reseeded(self, seed: int) -> StandardCollator:
        """A copy whose torch.Generator starts from exactly `seed`, in any process or DataLoader worker (the
        generator the main process would create from `seed`)."""
        import torch

        fresh = copy.copy(self)
        fresh.seed = int(seed)
        fresh.inner = copy.copy(self.inner)
        fresh.inner.seed = int(seed)
        fresh.inner.generator = torch.Generator().manual_seed(int(seed))
        return fresh

    def __call__(self, rows: Sequence[dict]) -> dict:
        if "labels" in rows[0]:
            return pad_premasked(rows, self.pad_id)
        batch = self.inner([{"input_ids": r["input_ids"]} for r in rows])
        return {k: batch[k] for k in ("input_ids", "attention_mask", "labels")}


def make_collator(tokenizer, settings: MaskingSettings, seed: int) -> Callable[[list[dict]], dict]:
    """The training collator for `settings.strategy`: rows with input_ids, word_ids, word_flags -> tensors."""
    settings.validate()
    if settings.strategy == "standard":
        return StandardCollator(tokenizer, settings, seed)
    return LemCollator(tokenizer, settings, seed)


def batches(rows: Sequence, size: int) -> Iterable[list]:
    for start in range(0, len(rows), size):
        yield [rows[i] for i in range(start, min(start + size, len(rows)))]


def as_rows(dataset) -> list[dict]:
    """Feature rows as plain dicts (an HF Dataset or any sequence of dicts)."""
    if hasattr(dataset, "to_list"):
        return dataset.to_list()
    return list(dataset)


def fixed_masked_examples(
    collator, dataset, batch_size: int = 32, seed: int = 0
) -> list[dict[str, list[int]]]:
    """Mask `dataset` once with a fresh copy of `collator` seeded with `seed`: unpadded rows with
    `input_ids`, `attention_mask`, `labels` that any collator of this module pads without re-masking,
    so validation loss compares across checkpoints."""
    fresh = collator.with_seed(seed)
    out = []
    for chunk in batches(as_rows(dataset), batch_size):
        b = fresh(chunk)
        for i, row in enumerate(chunk):
            n = len(row["input_ids"])
            out.append({k: b[k][i, :n].tolist() for k in ("input_ids", "attention_mask", "labels")})
    return out


def fixed_masked_validation(valid, collator, seed: int, limit: int | None):
    """The validation set of a training stage masked once, with a fixed seed, so every checkpoint sees the
    same masks: at most `limit` rows (a seeded sample), as an HF Dataset of pre-masked rows."""
    from datasets import Dataset

    if limit is not None and len(valid) > limit:
        valid = valid.shuffle(seed=seed).select(range(limit))
    return Dataset.from_list(fixed_masked_examples(collator, valid, batch_size=64, seed=seed))


def batch_seed(seed: int, batch_index: int) -> int:
    """The masking seed of training batch `batch_index` (counted from the start of training, across epochs)."""
    return int(np.random.SeedSequence([int(seed), int(batch_index)]).generate_state(1)[0])


class BatchSeededCollator:
    """Masks each training batch with a seed derived from (seed, batch index); pads pre-masked rows as they are.

    The batch index comes with the rows (`BATCH_KEY`, set by `lem.core.training`'s batch sampler from the epoch
    and the batch's position in it), not from a counter: the masks of a batch are the same whichever
    process or DataLoader worker collates it, and after a resume, whatever the number of batches skipped.
    """

    def __init__(self, collator, seed: int):
        self.collator = collator
        self.seed = int(seed)

    def __call__(self, rows: Sequence[dict]) -> dict:
        if "labels" in rows[0]:
            return self.collator(rows)  # pre-masked validation rows: padded, never re-masked
        if BATCH_KEY not in rows[0]:
            raise ValueError(
                f"training rows carry no {BATCH_KEY!r} (their batch index): load them with lem.core.training's "
                "batch sampler, or call .mask(rows, batch_index)"
            )
        return self.mask(rows, rows[0][BATCH_KEY])

    def mask(self, rows: Sequence[dict], batch_index: int) -> dict:
        """Mask the training batch `batch_index` made of `rows`."""
        return self.collator.reseeded(batch_seed(self.seed, batch_index))(rows)


# --- static shapes: every training batch the same shape, the labelled positions in a fixed-size buffer ------


def round_up(n: int, multiple: int = 8) -> int:
    return -(-int(n) // multiple) * multiple


def masked_capacity(settings: MaskingSettings, length: int) -> int:
    """Labelled positions one example of at most `length` tokens can carry: the size of the static path's
    per-row buffer (`static_batch`). The LM head runs on every slot, so the buffer is kept tight.

    LEM with a fixed budget in one-subword mode masks exactly max(1, round(count * budget)) positions, count
    at most `length` (`all_tokens`) or `length - 2` (`non_special`): that maximum, exact. The per-token draw
    of `standard`, `budget_rule: binomial` and whole-word overshoot have no small exact bound: the binomial
    mean + 4 standard deviations, rounded up to 8 (at 128 tokens: 40 slots, a row above them about 1 in a
    million); a batch with a row above it grows its buffer (`static_batch`): no labelled position is ever
    dropped."""
    length = int(length)
    if settings.strategy == "lem" and settings.budget_rule == "fixed" and not settings.whole_word:
        count = length if settings.count_rule == "all_tokens" else max(length - 2, 0)
        n = masking_budget(np.full((1, max(count, 1)), 0), np.array([count]), settings.budget,
                           settings.count_rule, settings.rounding)[0]  # fmt: skip
        return max(1, min(int(n), length))
    p = settings.mlm_probability if settings.strategy == "standard" else settings.budget
    bound = length * p + 4 * math.sqrt(length * p * (1 - p)) + (8 if settings.whole_word else 0)
    return min(round_up(max(math.ceil(bound), 1)), round_up(length))


def static_batch(batch: dict, length: int, capacity: int, pad_id: int, rows: int | None = None) -> dict:
    """`batch` (input_ids, attention_mask, labels: batch x its longest) in the static path's shape.

    input_ids (with `pad_id`) and attention_mask (with 0) padded to `length` columns; `labels` becomes the per-row buffer of
    the labelled positions' labels (batch x `capacity`, -100 in unused slots) and `masked_positions` their
    columns (0 in unused slots, which the loss ignores), in position order. A batch with a row above
    `capacity` gets a buffer of its largest row rounded up to 8 (a new shape, so a recompilation under
    `training.compile`). `rows`: a training batch short of rows (an epoch's last) is filled with rows
    without labels, which add nothing to the loss or the gradient."""
    import torch

    ids, attention, labels = batch["input_ids"], batch["attention_mask"], batch["labels"]
    n, width = ids.shape
    if width > length:
        raise ValueError(f"a batch of {width} tokens per row does not fit the static length {length}")
    labelled = labels != -100
    counts = labelled.sum(dim=1)
    k = int(capacity)
    most = int(counts.max()) if n else 0
    if most > k:
        k = round_up(most)
    order = torch.argsort((~labelled).to(torch.int8), dim=1, stable=True)[:, : min(k, width)]
    if order.shape[1] < k:
        order = torch.cat([order, order.new_zeros(n, k - order.shape[1])], dim=1)
    valid = torch.arange(k)[None, :] < counts[:, None]
    positions = torch.where(valid, order, 0)
    gathered = torch.where(valid, labels.gather(1, positions), -100)
    out = {
        "input_ids": torch.nn.functional.pad(ids, (0, length - width), value=int(pad_id)),
        "attention_mask": torch.nn.functional.pad(attention, (0, length - width), value=0),
        "labels": gathered,
        "masked_positions": positions,
    }
    short = (rows or n) - n
    if short > 0:
        fill = {key: v[:1].expand(short, *v.shape[1:]).clone() for key, v in out.items()}
        fill["labels"].fill_(-100)
        out = {key: torch.cat([out[key], fill[key]]) for key in out}
    return out


class StaticBatch:
    """A collate function in the static path's shape (`static_batch`): wraps the training collator (which
    masks), so the padding and the gathering of the labelled positions run where it runs (DataLoader
    workers). Training batches (rows with their batch index) are filled to `rows` rows; validation batches
    keep their rows, so the validation loss weighs every batch by its real size as before."""

    def __init__(self, collate: Callable[[list[dict]], dict], length: int, capacity: int, pad_id: int,
                 rows: int | None = None):  # fmt: skip
        self.collate = collate
        self.length, self.capacity, self.pad_id, self.rows = int(length), int(capacity), int(pad_id), rows

    def __call__(self, rows: Sequence[dict]) -> dict:
        fill = self.rows if BATCH_KEY in rows[0] else None
        return static_batch(self.collate(rows), self.length, self.capacity, self.pad_id, fill)
