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
import contextlib
import json
from dataclasses import replace
from pathlib import Path

from lem.core.files import write_text
from lem.core.inputs import read_text
from lem.core.stage import Stage, Verb, arg
from lem.report.archive import read_archive
from lem.report.blocks import default_index, page_blocks, read_index, rebuild_blocks
from lem.report.build import build_report
from lem.report.controls import ControlError, controls_gate
from lem.report.readme import update_readme
from lem.report.rerun import compare_runs, documented_match, run_tables, write_comparison
from lem.report.settings import ReportSettings


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
        archive=Path(a.archive) if a.archive else None,
        training_code=a.training_code,
    )
    out = Path(a.out_dir).resolve()
    print(
        f"report written: {out / 'summary.md'} (table: {out / 'summary.tsv'}, figure: {out / 'overview.png'})"
    )


def cmd_rebuild(a: argparse.Namespace) -> None:
    archive = read_archive(a.archive)
    out = Path(a.out_dir).resolve()
    i = archive.inputs
    settings = ReportSettings.from_dict(dict(i.settings), f"{a.archive}: the report settings")
    with archive.extracted() as root, contextlib.chdir(root):
        build_report(
            variants=list(i.variants), out_dir=out, settings=settings, mining=i.mining, sentiment=i.sentiment,
            curation=i.curation, nmt=i.nmt, annotation=i.annotation, coverage=i.coverage, models=i.models,
            news_stats=i.news_stats, para_stats=i.para_stats, config=archive.manifest.get("config"),
        )  # fmt: skip
    print(f"report rebuilt from {a.archive}: {out / 'summary.md'}")


def cmd_blocks(a: argparse.Namespace) -> None:
    index = Path(a.index)
    outcomes = rebuild_blocks(index, check=a.check)
    listed = {(o.entry.page, o.entry.block) for o in outcomes}
    unlisted = sorted(page_blocks(read_index(index).root) - listed)
    for o in outcomes:
        detail = f": {o.detail}" if o.detail else ""
        print(f"{o.entry.page} {o.entry.block}: {o.status}{detail}")
    for page, block in unlisted:
        print(f"{page} {block}: a generated block that {index} does not list")
    if a.check and (unlisted or any(o.status == "differs" for o in outcomes)):
        raise SystemExit(1)


def cmd_compare(a: argparse.Namespace) -> None:
    comparison = compare_runs(a.run, a.documented)
    if a.out:
        write_comparison(comparison, Path(a.out))
    print("\n".join(comparison.lines()))


def cmd_documented(a: argparse.Namespace) -> None:
    out = Path(a.out)
    index = Path(a.index) if a.index else default_index()
    config = run_tables(a.run).config
    match = documented_match(config, index)
    if match is None:
        line = (
            f"no documented run matches this run's configuration (the archives listed in {index}): "
            "nothing to compare with"
        )
        out.parent.mkdir(parents=True, exist_ok=True)
        write_text(out.with_suffix(".txt"), line + "\n")
        write_text(out, "status\n")  # an empty table: the rule's output exists
        print(line)
        return
    comparison = compare_runs(a.run, match)
    write_comparison(comparison, out)
    print("\n".join(comparison.lines()))


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
            arg("--archive", default=None,
                help="write the run archive of every file read here (.tar.gz with MANIFEST.json)"),
            arg("--training-code", default=None, help="the digest of the code that pre-trained the run's models "
                "(lem.run.training_code), written in the archive's manifest"),
            arg("--out-dir", required=True),
        ), settings="lem.report.settings:ReportSettings"),
        Verb("rebuild", "the whole report (tables, markdown, figures) recomputed from a run archive", cmd_rebuild, (
            arg("archive", help="a run archive (results/report/archive.tar.gz, docs/runs/*.tar.gz)"),
            arg("--out-dir", required=True),
        ), errors=(OSError,)),
        Verb("blocks", "rebuild every generated block of README.md and docs/ from its run archive", cmd_blocks, (
            arg("--index", default="docs/runs/blocks.yaml", help="the archives and the blocks they fill"),
            arg("--check", action="store_true",
                help="change nothing; exit 1 naming every block that differs from what its archive gives"),
        ), errors=(OSError,)),
        Verb("compare", "a rerun against a documented run: each metric identical, within tolerance or different",
             cmd_compare, (
            arg("run", help="a report folder (results/report) or a run archive"),
            arg("documented", help="the documented run: a run archive (docs/runs/*.tar.gz) or a report folder"),
            arg("--out", default=None, help="also write the table (TSV), its verdicts and its lines here"),
        ), errors=(OSError,)),
        Verb("documented", "compare a finished run with the shipped archive of the same configuration, if any",
             cmd_documented, (
            arg("--run", default="results/report"),
            arg("--index", default=None,
                help="the archives' index (default: docs/runs/blocks.yaml of the checkout this lem comes from)"),
            arg("--out", required=True),
        ), errors=(OSError,)),
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
