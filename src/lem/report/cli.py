"""The report: every variant on every task and language pair, in one table, plus figures.

Inputs are the metrics files of the evaluation stages; each names what it measures in its top-level `keys`
(`task`, `variant`, `dataset`, `pair`, `seed` where it applies; `docs/contracts.md`), which the report reads:
a file without them, or whose keys disagree with the flag it is given under or the variants asked for, fails
naming the file. Output: `summary.tsv` (long format, one row per variant x task x
dataset x pair x metric, with mean, standard deviation and number of seeds), `summary.md` (one pivot table
per task, variants as rows) and PNG figures.

`lem report build` (`lem.report.build`: values `tables`, the paired `comparisons` and their `verdicts`,
`markdown`, `figures`, the `controls`' verdicts), `lem report controls` (the gate on the controls) and `lem
report readme` (`lem.report.readme`).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

from lem.core.inputs import read_text
from lem.core.stage import Stage, Verb, arg
from lem.report.build import build_report
from lem.report.controls import ControlError, controls_gate
from lem.report.readme import update_readme


def cmd_readme(a: argparse.Namespace) -> None:
    update_readme(Path(a.readme), read_text(a.summary), a.note, a.block, tuple(a.sections or ()))
    print(f"{a.readme}: {a.block} block regenerated from {a.summary}")


def cmd_build(a: argparse.Namespace) -> None:
    settings = a.settings  # ReportSettings (lem.core.stage builds it from --settings)
    if a.alpha is not None:  # the one override: a family-wise level other than the config's
        settings = replace(settings, evidence=replace(settings.evidence, alpha=a.alpha))
    build_report(
        variants=a.variants,
        out_dir=Path(a.out_dir),
        settings=settings,
        mining=a.mining,
        sentiment=a.sentiment,
        curation=a.curation,
        nmt=a.nmt,
        annotation=a.annotation,
        coverage=a.coverage,
        models=a.models,
        news_stats=a.news_stats,
        para_stats=a.para_stats,
        config=a.config,
    )
    out = Path(a.out_dir).resolve()
    print(
        f"report written: {out / 'summary.md'} (table: {out / 'summary.tsv'}, figure: {out / 'overview.png'})"
    )


def cmd_controls(a: argparse.Namespace) -> None:
    controls_gate(a.verdicts, a.out)
    print(f"controls: every control passed ({a.verdicts})")


STAGE = Stage(
    "report",
    __doc__.splitlines()[0],
    (
        Verb("build", "the summary table (tsv, markdown) and figures of every metrics file", cmd_build, (
            arg("--mining", nargs="*", default=[]),
            arg("--sentiment", nargs="*", default=[]),
            arg("--curation", nargs="*", default=[]),
            arg("--annotation", nargs="*", default=[], help="annotation_eval/<annotator>/<lang>.json files"),
            arg("--nmt", nargs="*", default=[], help="metrics.json of lem nmt run (keys: variant, share)"),
            arg("--coverage", default=None, help="the annotation coverage JSON (results/annotate/coverage.json)"),
            arg("--variants", nargs="+", required=True, help="row order of the tables"),
            arg("--para-stats", nargs="*", default=[],
                help="stats.json of lem data pairs per pair (validation pairs that repeated training pairs)"),
            arg("--news-stats", nargs="*", default=[],
                help="stats.json of each prepared news evaluation set (gold read, kept, repaired, dropped)"),
            arg("--models", nargs="*", default=[],
                help="variant:stage:seed=model folder (stage base, mono or para): masking and loss figures"),
            arg("--alpha", type=float, default=None,
                help="family-wise level of each family's Holm-corrected verdicts (default: --settings' "
                "evidence.alpha, 0.05)"),
            arg("--config", type=json.loads, default=None,
                help="the run's whole configuration as JSON, written as config.json for the HTML report (not read)"),
            arg("--out-dir", required=True),
        ), settings="lem.report.settings:ReportSettings"),
        Verb("controls", "fail naming every cell whose control failed (the report's controls.json)",
             cmd_controls, (
            arg("--verdicts", default="results/report/controls.json"),
            arg("--out", required=True, help="written when every control passed"),
        ), errors=(ControlError,)),
        Verb("readme", "regenerate a generated result block (docs/results.md, README.md) from a summary.md",
             cmd_readme, (
            arg("--summary", default="results/report/summary.md"),
            arg("--readme", default="docs/results.md", help="the page that holds the block"),
            arg("--note", default="", help="a line above the tables (which run, when, how long)"),
            arg("--block", default="results",
                help="which generated block: results (the embedded default) or another name (ablation)"),
            arg("--sections", nargs="+", default=None,
                help="copy only the report's sections whose titles start so (README.md: Verdicts)"),
        ), errors=(OSError,)),
    ),
)  # fmt: skip
