"""The report (`lem report build`): every variant on every task and language pair, in one table, plus figures.

Output: `summary.tsv` (long format, one row per variant x task x dataset x pair x metric, with mean, standard
deviation and number of seeds), `summary.md` (one pivot table per task, variants as rows) and its HTML page,
`comparisons.tsv`, `controls.json` and PNG figures (`comparisons.png`: the declared comparisons, a forest figure
per family, shown in summary.html).
"""

from __future__ import annotations

import datetime
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from lem.core.files import atomic_path, write_text
from lem.evidence.controls import lexical_control_lines, no_signal_cells
from lem.report import figures
from lem.report.archive import ReportInputs, write_archive
from lem.report.comparisons import compare
from lem.report.controls import control_verdicts, write_verdicts
from lem.report.intervals import report_intervals
from lem.report.markdown import FOREST_FILE, markdown, para_markdown
from lem.report.settings import ReportSettings
from lem.report.tables import collect, summarise
from lem.report.verdicts import interim, marks

log = logging.getLogger("lem.report")


@dataclass(frozen=True)
class Report:
    """What the report computes from its inputs (before anything is written): the summary table, the
    declared comparisons, the controls' verdicts and the markdown page."""

    summary: pd.DataFrame
    comparisons: pd.DataFrame
    verdicts: list
    md: str


def compute_report(inputs: ReportInputs, settings: ReportSettings | None = None) -> Report:
    """The report's tables, verdicts and markdown from `inputs` (no file written): what `build_report` writes
    and what `lem report rebuild` recomputes from a run archive."""
    settings = settings if settings is not None else ReportSettings()
    ev = settings.evidence
    variants = list(inputs.variants)
    cov = json.loads(Path(inputs.coverage).read_text(encoding="utf-8")) if inputs.coverage else None
    values, items, control_metrics = collect(
        mining=inputs.mining,
        sentiment=inputs.sentiment,
        curation=inputs.curation,
        annotation=inputs.annotation,
        nmt=inputs.nmt,
        coverage=cov,
        variants=variants,
    )
    summary = summarise(values)
    controls = settings.controls.to_dict()
    verdicts = control_verdicts(summary, controls, settings.evalsets, settings.references, control_metrics)
    comparisons = compare(items, variants, evidence=ev, no_signal=no_signal_cells(verdicts))
    comparisons = interim(comparisons, ev.seeds_declared)  # fewer seeds than declared: no verdict worded
    summary = report_intervals(summary, items, ev.confidence)  # the verdicts' kind, inside [0, 1]
    order = {v: i for i, v in enumerate(variants)}
    summary = summary.sort_values(
        ["task", "dataset", "pair", "metric", "variant"],
        key=lambda c: c.map(order) if c.name == "variant" else c,
    )
    notes = lexical_control_lines(settings.controls.lexical, settings.evalsets)
    md = markdown(summary, variants, cov, comparisons, ev.alpha, list(inputs.news_stats), notes, verdicts)
    md += "\n".join(para_markdown(list(inputs.para_stats)))
    return Report(summary, comparisons, verdicts, md)


def write_tables(report: Report, out_dir: Path) -> None:
    """summary.tsv, comparisons.tsv and summary.md of `report` in `out_dir` (each written atomically)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with atomic_path(out_dir / "summary.tsv") as tmp:
        report.summary.to_csv(tmp, sep="\t", index=False, float_format="%.6f")
    with atomic_path(out_dir / "comparisons.tsv") as tmp:
        report.comparisons.to_csv(tmp, sep="\t", index=False, float_format="%.6f")
    write_text(out_dir / "summary.md", report.md)


def build_report(
    *,
    variants: list[str],
    out_dir: Path,
    settings: ReportSettings | None = None,
    mining: Sequence[str] = (),
    sentiment: Sequence[str] = (),
    curation: Sequence[str] = (),
    nmt: Sequence[str] = (),
    annotation: Sequence[str] = (),
    coverage: str | None = None,
    models: Sequence[str] = (),
    news_stats: Sequence[str] = (),
    para_stats: Sequence[str] = (),
    config: dict | None = None,
    archive: Path | None = None,
    settings_json: dict | None = None,
    training_code: str | None = None,
) -> pd.DataFrame:
    """Every output of the report in `out_dir`: summary.tsv / .md / .html, comparisons.tsv, controls.json, the
    figures (comparisons, overview, mining, masking and training), under `settings` (what the report reads of
    the config; None: its defaults) and, with `config` (the run's whole configuration, written and not read),
    config.json for the Snakemake report. With `archive`, the run archive of every file read
    (`lem.report.archive`; `settings_json`: the settings as given, stored in its manifest; `training_code`: the
    digest of the code that pre-trained the run's models, stored there too)."""
    settings = settings if settings is not None else ReportSettings()
    ev = settings.evidence
    inputs = ReportInputs(
        variants=tuple(variants),
        settings=settings_json if settings_json is not None else settings.to_dict(),
        mining=tuple(mining),
        sentiment=tuple(sentiment),
        curation=tuple(curation),
        nmt=tuple(nmt),
        annotation=tuple(annotation),
        news_stats=tuple(news_stats),
        para_stats=tuple(para_stats),
        coverage=coverage,
        models=tuple(models),
    )
    report = compute_report(inputs, settings)
    summary, comparisons, verdicts, md = report.summary, report.comparisons, report.verdicts, report.md
    for v in verdicts:
        (log.info if v.ok else log.warning)("controls: %s%s", "" if v.ok else "FAILED ", v.line)
    write_tables(report, out_dir)
    figures.comparisons_figure(comparisons, ev.families, out_dir / FOREST_FILE, ev.confidence, ev.power)
    write_text(out_dir / "summary.html", figures.markdown_html(md, "LEM pipeline: results", out_dir))
    figures.overview_figure(summary, variants, out_dir / "overview.png")
    figures.mining_figure(summary, variants, out_dir / "mining.png", marks(comparisons))
    write_verdicts(verdicts, out_dir / "controls.json")
    refs = figures.parse_models(list(models))
    figures.masking_figure(refs, variants, out_dir / "masking.png")
    figures.training_figure(refs, variants, out_dir / "training.png")
    if config is not None:
        write_text(out_dir / "config.json", json.dumps(config, indent=2, sort_keys=True) + "\n")
    if archive is not None:
        manifest = write_archive(
            archive, inputs, config, created=datetime.date.today().isoformat(), training_code=training_code
        )
        log.info("run archive: %s (%d files)", archive, len(manifest["files"]))
    return summary
