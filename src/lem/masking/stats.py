"""Masking statistics of a collator over a features dataset: what it actually masks.

Per language: entity shares among masked positions vs in the text, masked positions per example, how often
the budget is hit exactly, subwords masked per word, and the mask / random / unchanged replacement split.
Pre-training writes them as `masking_stats.json` next to each model (docs/contracts.md); `lem masking stats`
(`lem.masking.cli`) computes them for any settings by hand.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lem.core.entities import ENTITY_BITS, FLAG_ANY
from lem.masking.collate import MaskingSettings, batches, masking_budget, pad_rows

PRIORITY = ("ne", "verb", "noun")  # a word with several flags is attributed to the first


def share(num: float, den: float) -> float | None:
    return round(float(num) / float(den), 6) if den else None


@dataclass(frozen=True)
class _Rule:
    """The budget rule the statistics compare each example's masked count with."""

    budget: float
    count_rule: str
    rounding: str
    mask_id: int


@dataclass
class _Counts:
    """What a collator masked in one language's examples, summed over batches."""

    masked_in: dict[str, int] = field(default_factory=dict)
    text_in: dict[str, int] = field(default_factory=dict)
    primary: dict[str, int] = field(default_factory=dict)
    masked_counts: list[np.ndarray] = field(default_factory=list)
    wants: list[np.ndarray] = field(default_factory=list)
    per_word: list[np.ndarray] = field(default_factory=list)
    max_per_word: int = 0
    n_masked: int = 0
    n_content: int = 0
    n_mask_tok: int = 0
    n_kept: int = 0
    n_first_broken: int = 0


def _add_batch(
    c: _Counts, fresh, chunk: list[dict], tokenizer, settings: MaskingSettings, rule: _Rule
) -> None:
    """Mask one batch of examples with `fresh` and add what it masked to `c`."""
    out = fresh([{k: r[k] for k in ("input_ids", "word_ids", "word_flags")} for r in chunk])
    ids, lens = pad_rows(chunk, "input_ids", int(tokenizer.pad_token_id))
    word_ids, _ = pad_rows(chunk, "word_ids", -1)
    flags, _ = pad_rows(chunk, "word_flags", 0, dtype=np.uint8)
    labels = out["labels"].numpy()[:, : ids.shape[1]]
    new_ids = out["input_ids"].numpy()[:, : ids.shape[1]]
    masked = labels != -100
    content = word_ids >= 0
    tok_flags = np.where(content, np.take_along_axis(flags, np.maximum(word_ids, 0), axis=1), 0)
    for name, bit in [*ENTITY_BITS.items(), ("any", FLAG_ANY), ("enabled", settings.entity_mask)]:
        has = (tok_flags & bit) != 0
        c.masked_in[name] = c.masked_in.get(name, 0) + int((masked & has).sum())
        c.text_in[name] = c.text_in.get(name, 0) + int((content & has).sum())
    primary = np.full(tok_flags.shape, "other", dtype=object)
    for name in reversed(PRIORITY):
        primary[(tok_flags & ENTITY_BITS[name]) != 0] = name
    for name in [*PRIORITY, "other"]:
        c.primary[name] = c.primary.get(name, 0) + int((masked & (primary == name)).sum())
    c.n_masked += int(masked.sum())
    c.n_content += int(content.sum())
    c.n_mask_tok += int((masked & (new_ids == rule.mask_id)).sum())
    c.n_kept += int((masked & (new_ids == ids)).sum())
    c.masked_counts.append(masked.sum(axis=1))
    want = masking_budget(word_ids, lens, rule.budget, rule.count_rule, rule.rounding)
    if settings.strategy == "lem" and not settings.whole_word:
        n_words = np.array([len(set(r["word_ids"]) - {-1}) for r in chunk])
        want = np.minimum(want, n_words)
    c.wants.append(want)
    # entity first: an example breaks it when it masks a word outside the enabled types while an
    # enabled entity word of it stays unmasked (for LEM this must never happen)
    word_keys = np.arange(len(chunk))[:, None] * (word_ids.max() + 1) + word_ids  # (example, word)
    words_hit = word_keys[masked & content]
    enabled = content & ((tok_flags & settings.entity_mask) != 0)
    unmasked_entity = enabled & ~np.isin(word_keys, words_hit)
    c.n_first_broken += int(((masked & content & ~enabled).any(axis=1) & unmasked_entity.any(axis=1)).sum())
    if len(words_hit):
        counts = np.unique(words_hit, return_counts=True)[1]
        c.max_per_word = max(c.max_per_word, int(counts.max()))
        c.per_word.append(counts)


def _language_stats(c: _Counts, n_examples: int) -> dict[str, Any]:
    """One language's entry of `masking_stats`' `per_lang`."""
    mc, wt = np.concatenate(c.masked_counts), np.concatenate(c.wants)
    pw = np.concatenate(c.per_word) if c.per_word else np.zeros(0)
    n_masked, n_content = c.n_masked, c.n_content
    return {
        "n_examples": n_examples,
        "text_tokens_per_example": round(n_content / n_examples, 4),
        "masked_per_example": round(float(mc.mean()), 4),
        "masked_share_of_text": share(n_masked, n_content),
        "budget_per_example": round(float(wt.mean()), 4),
        "budget_hit_rate": share(int((mc == wt).sum()), len(mc)),
        "max_subwords_masked_per_word": c.max_per_word,
        "mean_subwords_masked_per_masked_word": round(float(pw.mean()), 4) if len(pw) else None,
        "entity_share": {
            name: {"masked": share(c.masked_in[name], n_masked), "text": share(c.text_in[name], n_content)}
            for name in c.masked_in
        },
        "entity_first_broken": share(c.n_first_broken, n_examples),
        "masked_by_priority": {name: share(v, n_masked) for name, v in c.primary.items()},
        "replacement": {
            "mask": share(c.n_mask_tok, n_masked),
            "unchanged": share(c.n_kept, n_masked),
            "random": share(n_masked - c.n_mask_tok - c.n_kept, n_masked),
        },
    }


def masking_stats(
    collator, dataset, tokenizer, n_examples: int = 2000, batch_size: int = 32, seed: int = 0
) -> dict:
    """What the collator actually masks, per `lang`: entity shares among masked positions vs in the text,
    masked positions per example, budget hit rate, the share of examples that mask a word outside the enabled
    types while an enabled entity word stays unmasked, subwords masked per word, replacement split."""
    settings: MaskingSettings = collator.settings
    fresh = collator.with_seed(seed)
    pick = np.sort(np.random.default_rng(seed).permutation(len(dataset))[: min(n_examples, len(dataset))])
    rows = dataset.select(pick).to_list() if hasattr(dataset, "select") else [dataset[int(i)] for i in pick]
    by_lang: dict[str, list[dict]] = {}
    for row in rows:
        by_lang.setdefault(str(row.get("lang", "all")), []).append(row)
    mask_id = int(tokenizer.mask_token_id)
    lem = settings.strategy == "lem"
    rule = _Rule(
        budget=settings.budget if lem else settings.mlm_probability,
        count_rule=settings.count_rule if lem else "non_special",
        rounding=settings.rounding if lem else "half_up",  # standard: the expected count, for comparison
        mask_id=mask_id,
    )
    per_lang = {}
    for lang, lang_rows in sorted(by_lang.items()):
        counts = _Counts()
        for chunk in batches(lang_rows, batch_size):
            _add_batch(counts, fresh, chunk, tokenizer, settings, rule)
        per_lang[lang] = _language_stats(counts, len(lang_rows))
    budget, count_rule, rounding = rule.budget, rule.count_rule, rule.rounding
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
