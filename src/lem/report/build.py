"""The report (`lem report build`): every variant on every task and language pair, in one table, plus figures.

Output: `summary.tsv` (long format, one row per variant x task x dataset x pair x metric, with mean, standard
deviation and number of seeds), `summary.md` (one pivot table per task, variants as rows) and its HTML page,
`comparisons.tsv`, `controls.json` and PNG figures (`comparisons.png`: the declared comparisons, a forest figure
per family, shown in summary.html).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pandas as pd

from lem.core.files import atomic_path, write_text
from lem.evidence.compare import evidence_settings
from lem.evidence.controls import lexical_control_lines, no_signal_cells
from lem.report import figures
from lem.report.comparisons import Items, compare
from lem.report.controls import control_verdicts, write_verdicts
from lem.report.intervals import report_intervals
from lem.report.markdown import FOREST_FILE, markdown, para_markdown
from lem.report.tables import collect, summarise
from lem.report.verdicts import marks

log = logging.getLogger("lem.report")


def build_report(
    mining: list[str],
    sentiment: list[str],
    curation: list[str],
    variants: list[str],
    out_dir: Path,
    annotation: list[str] = (),
    coverage: str | None = None,
    controls: dict | None = None,
    models: list[str] = (),
    significance: dict | None = None,
    config: dict | None = None,
    nmt: list[str] = (),
    news_stats: list[str] = (),
    para_stats: list[str] = (),
) -> pd.DataFrame:
    """Every output of the report in `out_dir`: summary.tsv / .md / .html, comparisons.tsv, the figures
    (comparisons, overview, mining, masking and training) and, with `config`, config.json (the run's
    configuration, for the Snakemake report)."""
    cov = json.loads(Path(coverage).read_text(encoding="utf-8")) if coverage else None
    items, control_metrics = Items(), {}
    values = collect(mining, sentiment, curation, annotation, cov, variants, items, nmt, control_metrics)
    summary = summarise(values)
    ev = evidence_settings((config or {}).get("evidence"))  # the declared families
    sig = {"alpha": ev["alpha"], **{k: v for k, v in (significance or {}).items() if v is not None}}
    controls = controls or {}
    evalsets = controls.get("evalsets")
    if evalsets is None:
        evalsets = ((config or {}).get("mining") or {}).get("evalsets", {})
    verdicts = control_verdicts(summary, controls, evalsets, controls.get("references"), control_metrics)
    for v in verdicts:
        (log.info if v.ok else log.warning)("controls: %s%s", "" if v.ok else "FAILED ", v.line)
    comparisons = compare(items, variants, sig["alpha"], no_signal=no_signal_cells(verdicts), evidence=ev)
    summary = report_intervals(summary, items)  # 95 % intervals of the verdicts' kind, inside [0, 1]
    order = {v: i for i, v in enumerate(variants)}
    summary = summary.sort_values(
        ["task", "dataset", "pair", "metric", "variant"],
        key=lambda c: c.map(order) if c.name == "variant" else c,
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    with atomic_path(out_dir / "summary.tsv") as tmp:
        summary.to_csv(tmp, sep="\t", index=False, float_format="%.6f")
    with atomic_path(out_dir / "comparisons.tsv") as tmp:
        comparisons.to_csv(tmp, sep="\t", index=False, float_format="%.6f")
    notes = lexical_control_lines(
        ((config or {}).get("controls") or {}).get("lexical"),
        ((config or {}).get("mining") or {}).get("evalsets", {}),
    )
    md = markdown(summary, variants, cov, comparisons, sig["alpha"], news_stats, notes, verdicts)
    md += "\n".join(para_markdown(para_stats))
    write_text(out_dir / "summary.md", md)
    figures.comparisons_figure(
        comparisons, ev["families"], out_dir / FOREST_FILE, ev["confidence"], ev["power"]
    )
    write_text(out_dir / "summary.html", figures.markdown_html(md, "LEM pipeline: results", out_dir))
    figures.overview_figure(summary, variants, out_dir / "overview.png")
    figures.mining_figure(summary, variants, out_dir / "mining.png", marks(comparisons))
    write_verdicts(verdicts, out_dir / "controls.json")
    refs = figures.parse_models(list(models))
    figures.masking_figure(refs, variants, out_dir / "masking.png")
    figures.training_figure(refs, variants, out_dir / "training.png")
    if config is not None:
        write_text(out_dir / "config.json", json.dumps(config, indent=2, sort_keys=True) + "\n")
    return summary
