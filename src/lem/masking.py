"""Masking collators: Linguistic Entity Masking (LEM) and the standard MLM/TLM baseline (`lem masking`).

LEM, per example (docs/lem-method.md, "Masking, exactly", with the authors' bugs removed):
1. Words are the SentencePiece words of `lem.features` (`word_ids`, -1 = special token), each with its
   flags (`word_flags`: 1 = NE, 2 = NOUN, 4 = VERB). A word is an *entity word* when it carries any of the
   enabled types (`entity_types`, any subset of ne / noun / verb).
2. Budget: `n = max(1, round(count * budget))` masked positions, where `count` follows `count_rule`:
   `non_special` (default) counts the text tokens only, `all_tokens` also counts `<s>`/`</s>` as the
   authors did; `rounding` is `half_up` (default: `floor(x + 0.5)`) or `half_even` (Python's `round`, as
   the authors' collator, on the same float64 product). The default keeps the budget at exactly 15 % of
   the text whether an example is a sentence (2 specials) or a pair (4 specials), the same base the
   standard baseline draws its 15 % from; `all_tokens` + `half_even` is the authors' budget.
   In one-subword mode `n` is capped at the number of words (a word is never counted twice).
3. Words are visited in a random order, entity words first (pass 1), then the other words (pass 2, which
   fills what pass 1 left of the budget); the first `n` words are chosen. Pass 1 alone fills the budget
   whenever there are at least `n` entity words.
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
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from lem.files import write_json
from lem.settings import known_keys

log = logging.getLogger(__name__)

ENTITY_BITS = {"ne": 1, "noun": 2, "verb": 4}
PRIORITY = ("ne", "verb", "noun")  # a word with several flags is attributed to the first (statistics only)
STRATEGIES = ("standard", "lem")
COUNT_RULES = ("non_special", "all_tokens")
ROUNDINGS = ("half_up", "half_even")
LEM_ONLY = ("entity_types", "budget", "count_rule", "rounding", "whole_word")  # ignored by `standard`
STANDARD_ONLY = ("mlm_probability",)  # ignored by `lem`


@dataclass(frozen=True)
class MaskingSettings:
    """How a training batch is masked; `from_dict` rejects unknown keys."""

    strategy: str = "lem"  # "lem" | "standard" (DataCollatorForLanguageModeling)
    entity_types: tuple[str, ...] = ("ne", "noun", "verb")  # lem: word types pass 1 takes first
    budget: float = 0.15  # lem: masked positions per counted token
    count_rule: str = "non_special"  # lem: "non_special" | "all_tokens" (counts <s>, </s>)
    rounding: str = "half_up"  # lem: "half_up" (floor(x + 0.5)) | "half_even" (Python's round)
    whole_word: bool = False  # lem: mask every subword of a chosen word instead of one
    mask_prob: float = 0.8  # share of masked positions replaced by <mask>
    random_prob: float = 0.1  # share replaced by a random token; the rest stay unchanged
    mlm_probability: float = 0.15  # standard: per-token masking probability

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> MaskingSettings:
        d = known_keys(cls, d, "masking settings")
        if "entity_types" in d:
            d["entity_types"] = tuple(d["entity_types"])
        settings = cls(**d)
        settings.validate()
        return settings

    @classmethod
    def for_variant(cls, variant: str, **overrides: Any) -> MaskingSettings:
        """Settings of a named variant: `mlm_tlm` (standard), `lem` (all types), `lem_ne`, `lem_ne_verb`, ..."""
        if variant == "mlm_tlm":
            return cls.from_dict({"strategy": "standard", **overrides})
        parts = variant.split("_")
        if parts[0] != "lem":
            raise ValueError(f"unknown masking variant {variant!r}: expected mlm_tlm, lem or lem_<types>")
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
        if problems:
            raise ValueError("masking settings: " + "; ".join(problems))

    @property
    def entity_mask(self) -> int:
        return int(np.bitwise_or.reduce([ENTITY_BITS[t] for t in self.entity_types] or [0]))

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["entity_types"] = list(self.entity_types)
        return d

    def canonical(self) -> MaskingSettings:
        """The same masking in one normal form: entity types in a fixed order, and the keys the strategy
        ignores at their defaults. Two settings mask alike exactly when their canonical forms are equal."""
        default = MaskingSettings()
        ignored = LEM_ONLY if self.strategy == "standard" else STANDARD_ONLY
        d = {**self.to_dict(), **{k: getattr(default, k) for k in ignored}}
        d["entity_types"] = [t for t in ENTITY_BITS if t in d["entity_types"]]
        d.update({k: float(d[k]) for k in ("budget", "mask_prob", "random_prob", "mlm_probability")})
        return MaskingSettings.from_dict(d)


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
    # Pass 1 then pass 2 in one sort: entity words first, others next, padding words last; random within.
    key = rng.random((batch, n_words)) + np.where(entity, 0.0, 1.0) + np.where(valid, 0.0, 2.0)
    order = np.argsort(key, axis=1, kind="stable")
    if settings.whole_word:
        sorted_sizes = np.take_along_axis(sizes, order, axis=1)
        before = np.cumsum(sorted_sizes, axis=1) - sorted_sizes
        take_sorted = (before < want[:, None]) & (sorted_sizes > 0)
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


def share(num: float, den: float) -> float | None:
    return round(float(num) / float(den), 6) if den else None


def masking_stats(
    collator, dataset, tokenizer, n_examples: int = 2000, batch_size: int = 32, seed: int = 0
) -> dict:
    """What the collator actually masks, per `lang`: entity shares among masked positions vs in the text,
    masked positions per example, budget hit rate, subwords masked per word, replacement split."""
    settings: MaskingSettings = collator.settings
    fresh = collator.with_seed(seed)
    pick = np.sort(np.random.default_rng(seed).permutation(len(dataset))[: min(n_examples, len(dataset))])
    rows = dataset.select(pick).to_list() if hasattr(dataset, "select") else [dataset[int(i)] for i in pick]
    by_lang: dict[str, list[dict]] = {}
    for row in rows:
        by_lang.setdefault(str(row.get("lang", "all")), []).append(row)
    mask_id = int(tokenizer.mask_token_id)
    lem = settings.strategy == "lem"
    budget = settings.budget if lem else settings.mlm_probability
    count_rule = settings.count_rule if lem else "non_special"
    rounding = settings.rounding if lem else "half_up"  # standard: the expected count, for comparison
    per_lang = {}
    for lang, lang_rows in sorted(by_lang.items()):
        acc: dict[str, Any] = {"masked_in": {}, "text_in": {}, "primary": {}}
        masked_counts, wants, max_per_word, per_word = [], [], 0, []
        n_masked = n_content = n_mask_tok = n_kept = 0
        for chunk in batches(lang_rows, batch_size):
            out = fresh([{k: r[k] for k in ("input_ids", "word_ids", "word_flags")} for r in chunk])
            ids, lens = pad_rows(chunk, "input_ids", int(tokenizer.pad_token_id))
            word_ids, _ = pad_rows(chunk, "word_ids", -1)
            flags, _ = pad_rows(chunk, "word_flags", 0, dtype=np.uint8)
            labels = out["labels"].numpy()[:, : ids.shape[1]]
            new_ids = out["input_ids"].numpy()[:, : ids.shape[1]]
            masked = labels != -100
            content = word_ids >= 0
            tok_flags = np.where(content, np.take_along_axis(flags, np.maximum(word_ids, 0), axis=1), 0)
            for name, bit in [*ENTITY_BITS.items(), ("any", 7), ("enabled", settings.entity_mask)]:
                has = (tok_flags & bit) != 0
                acc["masked_in"][name] = acc["masked_in"].get(name, 0) + int((masked & has).sum())
                acc["text_in"][name] = acc["text_in"].get(name, 0) + int((content & has).sum())
            primary = np.full(tok_flags.shape, "other", dtype=object)
            for name in reversed(PRIORITY):
                primary[(tok_flags & ENTITY_BITS[name]) != 0] = name
            for name in [*PRIORITY, "other"]:
                acc["primary"][name] = acc["primary"].get(name, 0) + int((masked & (primary == name)).sum())
            n_masked += int(masked.sum())
            n_content += int(content.sum())
            n_mask_tok += int((masked & (new_ids == mask_id)).sum())
            n_kept += int((masked & (new_ids == ids)).sum())
            masked_counts.append(masked.sum(axis=1))
            want = masking_budget(word_ids, lens, budget, count_rule, rounding)
            if settings.strategy == "lem" and not settings.whole_word:
                n_words = np.array([len(set(r["word_ids"]) - {-1}) for r in chunk])
                want = np.minimum(want, n_words)
            wants.append(want)
            words_hit = (np.arange(len(chunk))[:, None] * (word_ids.max() + 1) + word_ids)[masked & content]
            if len(words_hit):
                counts = np.unique(words_hit, return_counts=True)[1]
                max_per_word = max(max_per_word, int(counts.max()))
                per_word.append(counts)
        mc, wt = np.concatenate(masked_counts), np.concatenate(wants)
        pw = np.concatenate(per_word) if per_word else np.zeros(0)
        per_lang[lang] = {
            "n_examples": len(lang_rows),
            "text_tokens_per_example": round(n_content / len(lang_rows), 4),
            "masked_per_example": round(float(mc.mean()), 4),
            "masked_share_of_text": share(n_masked, n_content),
            "budget_per_example": round(float(wt.mean()), 4),
            "budget_hit_rate": share(int((mc == wt).sum()), len(mc)),
            "max_subwords_masked_per_word": max_per_word,
            "mean_subwords_masked_per_masked_word": round(float(pw.mean()), 4) if len(pw) else None,
            "entity_share": {
                name: {
                    "masked": share(acc["masked_in"][name], n_masked),
                    "text": share(acc["text_in"][name], n_content),
                }
                for name in acc["masked_in"]
            },
            "masked_by_priority": {name: share(v, n_masked) for name, v in acc["primary"].items()},
            "replacement": {
                "mask": share(n_mask_tok, n_masked),
                "unchanged": share(n_kept, n_masked),
                "random": share(n_masked - n_mask_tok - n_kept, n_masked),
            },
        }
    return {
        "settings": settings.to_dict(),
        "seed": seed,
        "n_examples": len(rows),
        "budget_rule": {
            "budget": budget,
            "count_rule": count_rule,
            "rounding": rounding,
            "rule": (
                f"max(1, {'round_half_even' if rounding == 'half_even' else 'round_half_up'}"
                f"({'all tokens' if count_rule == 'all_tokens' else 'non-special tokens'} * {budget}))"
                + ("" if lem else ": the expected count; standard masking draws each token independently")
            ),
        },
        "per_lang": per_lang,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="lem masking", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="verb", required=True)
    stats = sub.add_parser("stats", help="masking statistics of a collator over a features dataset")
    stats.add_argument("--features", required=True, help="DatasetDict directory from `lem features`")
    stats.add_argument("--split", default="train")
    stats.add_argument("--tokenizer", required=True)
    stats.add_argument("--settings", default="{}", help="MaskingSettings as a JSON object")
    stats.add_argument("--seed", type=int, default=0)
    stats.add_argument("--n-examples", type=int, default=2000)
    stats.add_argument("--batch-size", type=int, default=32)
    stats.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    from datasets import load_from_disk
    from transformers import AutoTokenizer

    t0 = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
    settings = MaskingSettings.from_dict(json.loads(args.settings))
    dataset = load_from_disk(args.features)[args.split]
    collator = make_collator(tokenizer, settings, args.seed)
    result = masking_stats(collator, dataset, tokenizer, args.n_examples, args.batch_size, args.seed)
    write_json(args.out, result)
    log.info(
        "masking stats: %d examples, %.1fs -> %s", result["n_examples"], time.perf_counter() - t0, args.out
    )
    return 0
