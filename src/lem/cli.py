"""The `lem` command: one sub-command per pipeline stage.

Each stage module owns its own argument parser (`main(argv) -> int`); this file only dispatches,
importing the stage lazily so that `lem --help` and light stages stay fast.
"""

from __future__ import annotations

import importlib
import sys

STAGES: dict[str, tuple[str, str]] = {
    "corpus": ("lem.corpus.cli", "generate the embedded trilingual corpus and evaluation sets"),
    "data": ("lem.data.cli", "download sources, load real datasets, prepare evaluation sets"),
    "annotate": (
        "lem.annotate.cli",
        "POS / NER annotation of a text file into the word-level Parquet format",
    ),
    "tokenizer": ("lem.tokenizer", "train a SentencePiece tokenizer in XLM-R format"),
    "features": ("lem.features", "tokenize annotated text into training features with entity flags"),
    "masking": ("lem.maskstats", "masking statistics of a collator over a features dataset"),
    "pretrain": ("lem.pretrain", "base-model pre-training and continual pre-training (mono, para)"),
    "stand-in": ("lem.standin", "a random XLM-R-architecture model + tokenizer for smoke tests"),
    "plan": ("lem.plan", "what a config's training jobs cost: steps, evaluations, disk, GPU-hours"),
    "embed": ("lem.embed", "sentence embeddings of one or more sentence files (one model load)"),
    "mine": ("lem.mining", "margin-based bitext mining and P/R/F1 against gold"),
    "curate": ("lem.curation", "rank a noisy parallel corpus by margin score"),
    "sentiment": ("lem.sentiment", "fine-tune and evaluate sentence classification"),
    "report": ("lem.report", "collect every metric into the summary table and figures"),
}


def usage() -> str:
    lines = ["usage: lem <stage> [args...]", "", "stages:"]
    lines += [f"  {name:<10} {doc}" for name, (_, doc) in STAGES.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in {"-h", "--help"}:
        print(usage())
        return 0
    stage, rest = argv[0], argv[1:]
    if stage not in STAGES:
        print(f"lem: unknown stage {stage!r}\n\n{usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(STAGES[stage][0])
    return int(module.main(rest) or 0)


if __name__ == "__main__":
    sys.exit(main())
