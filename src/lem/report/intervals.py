"""The intervals every table and figure of the report shows, one kind everywhere.

A system's mean on a task's tested metric (the metric its declared comparisons test: mining intersection F1,
sentiment macro-F1, curation precision at the largest kept share) carries the interval of the procedure its
verdicts use, `lem.evidence.crossed`: the seeds x items table of the system's per-item (jackknife)
pseudo-values, its mean squares and Satterthwaite's degrees of freedom, so the interval counts both the
pre-training seeds and the test items. A metric without per-item rows (forward F1, accuracy, chrF...) keeps
the t-interval over seeds, and says so (`summary.tsv`'s column `interval`). Both are at one level, the
report's `evidence.confidence` (`summary.tsv`'s column `confidence`), and every note and label says that
level. Every interval of a proportion is cut to [0, 1] (BLEU and chrF to [0, 100]): a bound outside the
metric's range is no value a system can score.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from lem.evidence import crossed
from lem.evidence.stats import Statistic
from lem.report.comparisons import HEADLINE, Items

# Imported inside functions: scipy (`lem report --help` imports this module and needs no scipy)

TWO_LEVEL = "two-level"  # seeds x test items, the verdicts' procedure
SEEDS = "seeds"  # the t-interval over seeds: no per-item rows for this metric
NONE = "none"  # one seed: no spread to estimate


def kind_words(kind: str, confidence: float = 0.95) -> str:
    """What the report says of each kind of interval at its level (its tables' notes and the figures'
    labels): "95 % two-level interval (...)"."""
    words = {
        TWO_LEVEL: "two-level interval (pre-training seeds and test items, as the verdicts)",
        SEEDS: "t-interval over seeds (no per-item rows for this metric)",
    }
    return f"{100 * confidence:.4g} % {words[kind]}"


KIND_WORDS = {kind: kind_words(kind) for kind in (TWO_LEVEL, SEEDS)}  # at the default level, 95 %

# The range of every metric the report shows: shares, except BLEU and chrF (0-100).
RANGE = {"nmt": (0.0, 100.0)}
PROPORTION = (0.0, 1.0)


def metric_range(task: str) -> tuple[float, float]:
    """The values a metric of `task` can take."""
    return RANGE.get(task, PROPORTION)


def two_level_interval(
    runs: Mapping[str, Sequence[np.ndarray]], statistic: Statistic, confidence: float = 0.95
) -> dict[str, float]:
    """One system's mean over its pre-training seeds (each seed's runs averaged) with the `confidence`
    interval of `lem.evidence.crossed` over seeds and test items: {"mean", "low", "high", "df"}; low and high
    are NaN with fewer than two seeds. `runs`: seed -> (units, stats) rows, as `Items.runs`."""
    from scipy.stats import t as student_t

    scores, ys = [], []
    for rows in runs.values():
        per_run = [crossed.pseudo_values(r, statistic) for r in rows]
        scores.append(float(np.mean([s for s, _ in per_run])))
        ys.append(np.mean(np.stack([y for _, y in per_run]), axis=0))
    nan = float("nan")
    mean = float(np.mean(scores)) if scores else nan
    if len(scores) < 2:
        return {"mean": mean, "low": nan, "high": nan, "df": nan}
    m = crossed.crossed_moments(np.stack(ys))
    se, df = math.sqrt(max(0.0, float(m["var"]))), float(m["df"])
    half = float(student_t.ppf((1 + confidence) / 2, df)) * se if math.isfinite(df) else nan
    return {"mean": mean, "low": mean - half, "high": mean + half, "df": df}


def tested_metric(items: Items, cell: tuple[str, str, str]) -> str | None:
    """The summary's metric of a cell's per-item rows (None for NMT: its table shows s.d., not intervals)."""
    if cell[0] == "nmt":
        return None
    return items.metric.get(cell, HEADLINE.get(cell[0]))


def report_intervals(summary: pd.DataFrame, items: Items, confidence: float = 0.95) -> pd.DataFrame:
    """`summary` with one kind of interval per row at the level `confidence` (column `confidence`), said in
    its column `interval`: two-level where the row is a tested metric with per-item rows (its half-width
    around the row's mean, which is the mean of the per-seed scores), else the t-interval over seeds (from
    the row's mean, s.d. and seeds), `none` with one seed; every bound inside the metric's range."""
    from scipy.stats import t as student_t

    out = summary.copy()
    out[["low", "high"]] = out[["low", "high"]].astype(float)  # None (one seed) as NaN
    out["interval"] = np.where(out["low"].notna(), SEEDS, NONE)
    seeds = (out["interval"] == SEEDS) & (out["n"] > 1) if {"n", "std"} <= set(out) else None
    if seeds is not None and seeds.any():  # the t-interval over seeds at the report's level
        n = out.loc[seeds, "n"].astype(float)
        half = student_t.ppf((1 + confidence) / 2, n - 1) * out.loc[seeds, "std"].astype(float) / np.sqrt(n)
        out.loc[seeds, "low"] = out.loc[seeds, "mean"] - half
        out.loc[seeds, "high"] = out.loc[seeds, "mean"] + half
    out["confidence"] = confidence
    index = {
        (r.task, r.dataset, r.pair, r.metric, r.variant): i
        for i, r in zip(out.index, out.itertuples(), strict=True)
    }
    for task, dataset, pair, variant in items.units:
        cell = (task, dataset, pair)
        metric = tested_metric(items, cell)
        i = index.get((task, dataset, pair, metric, variant))
        if i is None:
            continue
        iv = two_level_interval(items.runs(*cell, variant), items.statistic(cell), confidence)
        if math.isnan(iv["low"]):
            continue
        half, mean = (iv["high"] - iv["low"]) / 2, float(out.loc[i, "mean"])  # the same mean on a run's files
        out.loc[i, ["low", "high", "interval"]] = [mean - half, mean + half, TWO_LEVEL]
    lo, hi = zip(*(metric_range(t) for t in out["task"]), strict=True) if len(out) else ((), ())
    out["low"] = out["low"].clip(lower=pd.Series(lo, index=out.index))
    out["high"] = out["high"].clip(upper=pd.Series(hi, index=out.index))
    return out


def interval_note(kinds: set[str], confidence: float = 0.95) -> str:
    """The line under a table or on a figure that says what its brackets or error bars are, at their level."""
    said = [kind_words(k, confidence) for k in (TWO_LEVEL, SEEDS) if k in kinds]
    if not said:
        return ""
    return "Brackets: " + "; elsewhere ".join(said) + ", inside the metric's range [0, 1]."
