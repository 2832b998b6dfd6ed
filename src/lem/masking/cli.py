"""Masking statistics of a collator over a features dataset: what it actually masks (`lem masking`).

Per language: entity shares among masked positions vs in the text, masked positions per example, how often
the budget is hit exactly, subwords masked per word, and the mask / random / unchanged replacement split.
Pre-training writes them as `masking_stats.json` next to each model (docs/contracts.md); `lem masking stats`
computes them for any settings by hand.
"""

from __future__ import annotations

import argparse
import logging
import time
from typing import Any

import numpy as np

from lem.core.entities import ENTITY_BITS, FLAG_ANY
from lem.core.files import write_json
from lem.core.stage import Stage, Verb, arg
from lem.masking.collate import MaskingSettings, batches, make_collator, masking_budget, pad_rows

log = logging.getLogger(__name__)

PRIORITY = ("ne", "verb", "noun")  # a word with several flags is attributed to the first


def share(num: float, den: float) -> float | None:
    return round(float(num) / float(den), 6) if den else None


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
    budget = settings.budget if lem else settings.mlm_probability
    count_rule = settings.count_rule if lem else "non_special"
    rounding = settings.rounding if lem else "half_up"  # standard: the expected count, for comparison
    per_lang = {}
    for lang, lang_rows in sorted(by_lang.items()):
        acc: dict[str, Any] = {"masked_in": {}, "text_in": {}, "primary": {}}
        masked_counts, wants, max_per_word, per_word = [], [], 0, []
        n_masked = n_content = n_mask_tok = n_kept = n_first_broken = 0
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
            for name, bit in [*ENTITY_BITS.items(), ("any", FLAG_ANY), ("enabled", settings.entity_mask)]:
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
            # entity first: an example breaks it when it masks a word outside the enabled types while an
            # enabled entity word of it stays unmasked (for LEM this must never happen)
            word_keys = np.arange(len(chunk))[:, None] * (word_ids.max() + 1) + word_ids  # (example, word)
            words_hit = word_keys[masked & content]
            enabled = content & ((tok_flags & settings.entity_mask) != 0)
            unmasked_entity = enabled & ~np.isin(word_keys, words_hit)
            n_first_broken += int(
                ((masked & content & ~enabled).any(axis=1) & unmasked_entity.any(axis=1)).sum()
            )
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
            "entity_first_broken": share(n_first_broken, len(lang_rows)),
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


def cmd_stats(a: argparse.Namespace) -> None:
    from datasets import load_from_disk
    from transformers import AutoTokenizer

    t0 = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(a.tokenizer)
    dataset = load_from_disk(a.features)[a.split]
    collator = make_collator(tokenizer, a.settings, a.seed)
    result = masking_stats(collator, dataset, tokenizer, a.n_examples, a.batch_size, a.seed)
    write_json(a.out, result)
    log.info("masking stats: %d examples, %.1fs -> %s", result["n_examples"], time.perf_counter() - t0, a.out)


STAGE = Stage(
    "masking",
    __doc__.splitlines()[0],
    (
        Verb("stats", "masking statistics of a collator over a features dataset", cmd_stats, (
            arg("--features", required=True, help="DatasetDict directory from `lem features`"),
            arg("--split", default="train"),
            arg("--tokenizer", required=True),
            arg("--seed", type=int, default=0),
            arg("--n-examples", type=int, default=2000),
            arg("--batch-size", type=int, default=32),
            arg("--out", required=True),
        ), settings=MaskingSettings),
    ),
)  # fmt: skip
