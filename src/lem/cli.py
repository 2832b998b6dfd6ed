"""The `lem` command: `lem <stage> <verb> [--flags]`, one stage per pipeline step (`lem.core.stage`).

Each stage module declares `STAGE = lem.core.stage.Stage(...)`; this file lists them and imports only the one a
command names, so that `lem --help` and light stages stay fast. `docs/contracts.md` documents every verb;
tests/unit/test_cli.py checks it, and every `lem` call of the workflow's rules, against these declarations.
Every command first pins the CPU's numeric code paths as `LEM_CPU_NUMERICS` says (`lem.core.numerics`), before
anything loads torch; in a local run with a fork server (`LEM_FORKSERVER=1`), the command is then run by a fork
of it (`lem.core.forkserver`).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence

from lem import __version__
from lem.core.forkserver import serve_main, served
from lem.core.numerics import pin_numerics
from lem.core.stage import Stage

STAGES: dict[str, tuple[str, str]] = {
    "corpus": ("lem.corpus.cli", "generate the embedded trilingual corpus and evaluation sets"),
    "data": ("lem.data.cli", "download sources, load real datasets, prepare evaluation sets"),
    "annotate": ("lem.annotate.cli", "POS / NER annotation into the word-level Parquet format"),
    "tokenizer": ("lem.tokenizer", "train a SentencePiece tokenizer in XLM-R format"),
    "features": ("lem.features", "tokenize annotated text into training features with entity flags"),
    "masking": ("lem.masking.cli", "masking statistics of a collator over a features dataset"),
    "pretrain": ("lem.pretrain.cli", "base-model pre-training and continual pre-training (mono, para)"),
    "stand-in": ("lem.stand_in", "a random XLM-R-architecture model + tokenizer for smoke tests"),
    "plan": ("lem.plan", "what a config's training jobs cost: steps, evaluations, disk, GPU-hours"),
    "embed": ("lem.embed", "sentence embeddings of one or more sentence files (one model load)"),
    "reference": ("lem.reference", "reference encoders' embeddings (LASER, sentence-transformers/LaBSE)"),
    "mine": ("lem.mine.cli", "margin-based bitext mining and P/R/F1 against gold"),
    "curate": ("lem.curate", "rank a noisy parallel corpus by margin score"),
    "nmt": ("lem.nmt.cli", "NMT on the top share of a ranked corpus: BLEU, chrF, paired bootstrap"),
    "sentiment": ("lem.sentiment", "fine-tune and evaluate sentence classification"),
    "report": ("lem.report.cli", "collect every metric into the summary table and figures"),
}


def stage(name: str) -> Stage:
    """The declared stage `name` (its module imported now)."""
    module = importlib.import_module(STAGES[name][0])
    declared: Stage = module.STAGE
    if declared.name != name:
        raise RuntimeError(f"{STAGES[name][0]}.STAGE is named {declared.name!r}, listed as {name!r}")
    return declared


def usage() -> str:
    lines = ["usage: lem <stage> <verb> [args...]   (lem <stage> --help lists its verbs; lem --version)", "",
             "stages:"]  # fmt: skip
    lines += [f"  {name:<10} {doc}" for name, (_, doc) in STAGES.items()]
    return "\n".join(lines)


def commands_markdown() -> str:
    """The table of every command and its flags (`lem --commands`), kept in `docs/contracts.md`."""
    rows = ["| command | what it does | flags (* required) |", "|---|---|---|"]
    for name in STAGES:
        for verb in stage(name).verbs:
            flags = ", ".join(
                f"`{a.flags[0]}`" + ("*" if a.options.get("required") else "") for a in verb.all_args()
            )
            rows.append(f"| `lem {name} {verb.name}` | {verb.help} | {flags} |")
    return "\n".join(rows) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    try:
        pin_numerics()  # first: before any stage imports torch (resources.cpu_numerics, lem.core.numerics)
    except ValueError as err:
        print(f"lem: {err}", file=sys.stderr)
        return 2
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == [
        "--fork-server"
    ]:  # a local run's fork server (lem.core.forkserver): not a command of its own
        return serve_main(argv[1:], run=main)
    code = served(argv)  # by the run's fork server, when the run has one and it takes the command
    if code is not None:
        return code
    if not argv or argv[0] in {"-h", "--help"}:
        print(usage())
        return 0
    if argv[0] == "--commands":
        sys.stdout.write(commands_markdown())
        return 0
    if argv[0] in {"--version", "-V"}:
        print(f"lem {__version__} (lem-pipeline)")
        return 0
    name, rest = argv[0], argv[1:]
    if name not in STAGES:
        print(f"lem: unknown stage {name!r}\n\n{usage()}", file=sys.stderr)
        return 2
    return stage(name).main(rest)


def command(name: str) -> Callable[[Sequence[str]], int]:
    """`lem <name> ...` as a function of the rest of its argv (for tests and scripts)."""
    return lambda argv: main([name, *argv])


if __name__ == "__main__":
    sys.exit(main())
