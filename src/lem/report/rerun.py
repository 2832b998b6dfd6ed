"""A rerun compared with a documented run (`lem report compare RUN DOCUMENTED`): for every metric of the
summary table, identical / within tolerance / different, with the difference in units of the documented
seed spread and against the documented interval; for every declared comparison, whether its verdict agrees.

`RUN` and `DOCUMENTED` are each a report folder (`summary.tsv`, `comparisons.tsv`, `config.json`) or a run
archive (`lem.report.archive`: its report is recomputed from the archived metrics). A metric is
*identical* when both means print alike at the report's precision (6 decimals), *within tolerance* when the
rerun's mean lies inside the documented row's interval (the report's interval of the mean: two-level where
the row is tested, else over seeds), and *different* otherwise (or when the row exists on one side only, or
the documented row has no interval to judge by). The documented runs shipped with the workflow are listed in
`docs/runs/blocks.yaml`; `documented_match` finds the one whose configuration is the run's own.
"""

from __future__ import annotations

import io
import json
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from lem.core.files import atomic_path, write_text
from lem.core.inputs import InputError
from lem.report.archive import config_digest, read_archive
from lem.report.blocks import archive_report, read_index

SUMMARY_KEYS = ["task", "dataset", "pair", "metric", "variant"]
COMPARISON_KEYS = ["family", "a", "b", "task", "dataset", "pair", "metric"]
IDENTICAL, WITHIN, DIFFERENT = "identical", "within tolerance", "different"


@dataclass(frozen=True)
class RunTables:
    """A run's summary and comparisons tables, its configuration (None when unknown) and what it is."""

    summary: pd.DataFrame
    comparisons: pd.DataFrame
    config: dict[str, Any] | None
    source: str


def run_tables(source: str | Path) -> RunTables:
    """The tables of a report folder or of a run archive (recomputed from its metrics)."""
    path = Path(source)
    if path.is_dir():
        files = {name: path / name for name in ("summary.tsv", "comparisons.tsv")}
        for name, f in files.items():
            if not f.is_file():
                raise InputError(f"{path}: no {name} (expected a report folder such as results/report)")
        summary, comparisons = _read_tsv(files["summary.tsv"]), _read_tsv(files["comparisons.tsv"])
        cfg = path / "config.json"
        config = json.loads(cfg.read_text(encoding="utf-8")) if cfg.is_file() else None
        return RunTables(summary, comparisons, config, str(path))
    if not path.is_file():
        raise InputError(f"{path}: no such report folder or run archive")
    archive = read_archive(path)
    report = archive_report(archive)
    # the tables as the report writes them (6 decimals), so that both sides are read alike
    summary = _as_written(report.summary)
    comparisons = _as_written(report.comparisons)
    return RunTables(summary, comparisons, archive.manifest.get("config"), str(path))


def _read_tsv(path: Path) -> pd.DataFrame:
    """A report table; an empty file (a run with no declared comparison) is an empty table."""
    if not path.read_text(encoding="utf-8").strip():
        return pd.DataFrame()
    return pd.read_csv(path, sep="\t", keep_default_na=False, na_values=[""])


def _as_written(frame: pd.DataFrame) -> pd.DataFrame:
    text = frame.to_csv(sep="\t", index=False, float_format="%.6f")
    if not text.strip():
        return pd.DataFrame()
    return pd.read_csv(io.StringIO(text), sep="\t", keep_default_na=False, na_values=[""])


def _num(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def compare_summaries(run: pd.DataFrame, doc: pd.DataFrame) -> pd.DataFrame:
    """One row per metric row of either table: both means, the difference, the documented s.d. and
    interval, the difference in s.d. units, and the status."""
    keys = [k for k in SUMMARY_KEYS if k in run.columns and k in doc.columns]
    merged = doc.merge(run, on=keys, how="outer", suffixes=("_doc", "_run"), indicator=True)
    rows = []
    for r in merged.to_dict("records"):
        m_doc, m_run = _num(r.get("mean_doc")), _num(r.get("mean_run"))
        sd, lo, hi = _num(r.get("std_doc")), _num(r.get("low_doc")), _num(r.get("high_doc"))
        diff = m_run - m_doc
        if r["_merge"] != "both":
            status, why = (
                DIFFERENT,
                "only in the " + ("documented run" if r["_merge"] == "left_only" else "rerun"),
            )
        elif f"{m_doc:.6f}" == f"{m_run:.6f}":
            status, why = IDENTICAL, ""
        elif math.isnan(lo) or math.isnan(hi):
            status, why = DIFFERENT, "the documented row has no interval"
        elif lo - 5e-7 <= m_run <= hi + 5e-7:
            status, why = WITHIN, "inside the documented interval"
        else:
            status, why = DIFFERENT, "outside the documented interval"
        rows.append({
            **{k: r[k] for k in keys},
            "documented": m_doc, "rerun": m_run, "difference": diff, "documented_sd": sd,
            "difference_in_sd": diff / sd if sd and sd > 0 and not math.isnan(diff) else math.nan,
            "documented_low": lo, "documented_high": hi, "status": status, "why": why,
        })  # fmt: skip
    return pd.DataFrame(rows, columns=[*keys, "documented", "rerun", "difference", "documented_sd",
                                       "difference_in_sd", "documented_low", "documented_high", "status",
                                       "why"])  # fmt: skip


def compare_verdicts(run: pd.DataFrame, doc: pd.DataFrame) -> pd.DataFrame:
    """One row per declared comparison of either table: both verdicts and differences, agreement."""

    def declared(t: pd.DataFrame) -> pd.DataFrame:
        return t[t["role"] == "comparison"] if "role" in t.columns else t

    run, doc = declared(run), declared(doc)
    keys = [k for k in COMPARISON_KEYS if k in run.columns and k in doc.columns]
    if not keys:
        return pd.DataFrame(columns=["verdict_documented", "verdict_rerun", "agrees"])
    merged = doc.merge(run, on=keys, how="outer", suffixes=("_doc", "_run"), indicator=True)
    diff_col = "diff" if "diff_doc" in merged.columns else "difference"
    rows = []
    for r in merged.to_dict("records"):
        v_doc, v_run = r.get("verdict_doc"), r.get("verdict_run")
        both = r["_merge"] == "both"
        rows.append({
            **{k: r[k] for k in keys},
            "verdict_documented": v_doc if both or r["_merge"] == "left_only" else None,
            "verdict_rerun": v_run if both or r["_merge"] == "right_only" else None,
            "difference_documented": _num(r.get(f"{diff_col}_doc")),
            "difference_rerun": _num(r.get(f"{diff_col}_run")),
            "agrees": bool(both and v_doc == v_run),
        })  # fmt: skip
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class Comparison:
    metrics: pd.DataFrame
    verdicts: pd.DataFrame
    run: str
    documented: str

    def lines(self) -> list[str]:
        """What a user reads: counts by status, then every metric that is not identical, every verdict
        that does not agree (at most 20 of each)."""
        counts = Counter(self.metrics["status"])
        head = (
            f"compared with the documented run {self.documented}: {len(self.metrics)} metric rows: "
            + ", ".join(f"{counts.get(s, 0)} {s}" for s in (IDENTICAL, WITHIN, DIFFERENT))
        )
        agree = int(self.verdicts["agrees"].sum()) if len(self.verdicts) else 0
        out = [head, f"verdicts: {agree} of {len(self.verdicts)} declared comparisons agree"]
        shown = self.metrics[self.metrics["status"] != IDENTICAL].head(20)
        for r in shown.to_dict("records"):
            where = " ".join(str(r[k]) for k in SUMMARY_KEYS if k in r)
            sd = "" if math.isnan(r["difference_in_sd"]) else f", {r['difference_in_sd']:+.2f} s.d."
            out.append(
                f"  {r['status']}: {where}: {r['rerun']:.4f} against {r['documented']:.4f} "
                f"({r['difference']:+.4f}{sd}; documented interval [{r['documented_low']:.4f}, "
                f"{r['documented_high']:.4f}]{'; ' + r['why'] if r['why'] else ''})"
            )
        for r in self.verdicts[~self.verdicts["agrees"]].head(20).to_dict("records"):
            where = " ".join(str(r[k]) for k in COMPARISON_KEYS if k in r)
            out.append(f"  verdict differs: {where}: {r['verdict_rerun']} against {r['verdict_documented']}")
        return out


def compare_runs(run: str | Path, documented: str | Path) -> Comparison:
    a, b = run_tables(run), run_tables(documented)
    return Comparison(
        compare_summaries(a.summary, b.summary),
        compare_verdicts(a.comparisons, b.comparisons),
        a.source,
        b.source,
    )


def write_comparison(comparison: Comparison, out: Path) -> None:
    """The metric rows as TSV at `out`, the verdict rows beside it (`<stem>.verdicts.tsv`), the lines as
    `<stem>.txt`."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(out) as tmp:
        comparison.metrics.to_csv(tmp, sep="\t", index=False, float_format="%.6f")
    with atomic_path(out.with_suffix(".verdicts.tsv")) as tmp:
        comparison.verdicts.to_csv(tmp, sep="\t", index=False, float_format="%.6f")
    write_text(out.with_suffix(".txt"), "\n".join(comparison.lines()) + "\n")


def documented_match(config: dict[str, Any] | None, index: Path) -> Path | None:
    """The shipped archive (listed in `index`, docs/runs/blocks.yaml) whose run had `config`: every key equal,
    null-valued keys aside (`without_nulls`)."""
    if config is None or not index.is_file():
        return None
    want = config_digest(without_nulls(config))
    for archive in read_index(index).archives.values():
        path = index.parent / archive.file
        if path.is_file() and config_digest(without_nulls(read_archive(path).manifest.get("config"))) == want:
            return path
    return None


def without_nulls(value: Any) -> Any:
    """A configuration without its null-valued keys: a key a later schema added with the default null (for
    example `evidence.seeds_declared`) leaves the run it describes the same run."""
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value
