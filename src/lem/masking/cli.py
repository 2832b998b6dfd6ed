"""Masking statistics of a collator over a features dataset: what it actually masks (`lem masking`).

Per language: entity shares among masked positions vs in the text, masked positions per example, how often
the budget is hit exactly, subwords masked per word, and the mask / random / unchanged replacement split
(`lem.masking.stats`). Pre-training writes them as `masking_stats.json` next to each model
(docs/contracts.md); `lem masking stats` computes them for any settings by hand.
"""

from __future__ import annotations

import argparse
import logging
import time

from lem.core.files import write_json
from lem.core.stage import Stage, Verb, arg
from lem.masking.collate import MaskingSettings, make_collator
from lem.masking.stats import masking_stats

# Imported inside functions: datasets and transformers (`lem masking --help` needs neither)

log = logging.getLogger(__name__)


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
