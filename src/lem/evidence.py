"""The report's evidence: intervals over seeds, paired tests between variants, Holm's correction.

Which comparisons are shown (`comparisons_of`): every `lem*` variant against `mlm_tlm`, and `mlm_tlm` against
`base`, on each task's headline metric, per dataset and pair. The tests pool the test items over seeds
(`lem.stats`): mining by a paired bootstrap over documents (each document's [correct, mined, gold] counts
summed over the seeds of each system, the F1 of the column sums), sentiment by approximate randomisation over
test examples (macro-F1 of per-example counts, summed over seeds), curation by approximate randomisation over
the corpus's pairs (the precision of clean pairs in the largest kept share: whether each pair is kept and
clean). Holm's correction runs over every
comparison the report shows, so "significant" means at family-wise level `alpha` over all of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from lem import stats

# The headline metric of each task with a paired test, and how a run's items are read.
HEADLINE = {"mining": "intersection_f1", "sentiment": "macro_f1"}
REFERENCE = "mlm_tlm"


@dataclass
class Items:
    """A run's per-item rows for the paired tests, keyed by (task, dataset, pair, variant): one array per
    run (seed), all over the same units in the same order."""

    units: dict[tuple[str, str, str, str], list[np.ndarray]] = field(default_factory=dict)
    unit_ids: dict[tuple[str, str, str], list[str]] = field(default_factory=dict)
    n_labels: dict[tuple[str, str, str], int] = field(default_factory=dict)
    metric: dict[tuple[str, str, str], str] = field(default_factory=dict)  # a cell's tested metric

    def add_curation(self, key: dict[str, str], data: dict[str, Any], path: str) -> None:
        """A labelled curation ranking: its pairs' ranks and clean flags (`items`), tested on the precision
        of clean pairs in the largest kept share (`keep_fractions`). An unlabelled corpus has no test."""
        from lem.nmt import kept_count

        if "average_precision" not in data:
            return  # no labels: nothing to test
        items = data.get("items")
        shares = (data.get("settings") or {}).get("keep_fractions") or []
        if (
            not isinstance(items, dict)
            or not shares
            or len(items.get("rank", ())) != len(items.get("clean", ()))
        ):
            raise ValueError(
                f"{path}: a curation metrics file without per-pair `items` (rank, clean): rerun `lem curate rank`"
            )
        cell = ("curation", key["dataset"], key["pair"])
        share = max(shares)
        self._check_units(cell, [str(c) for c in items["clean"]], path)
        self.metric[cell] = f"precision_at_{share:g}"
        ranks = np.asarray(items["rank"], dtype=np.int64)
        kept = ranks <= kept_count(len(ranks), share=share)
        rows = stats.kept_precision_counts(kept, np.asarray(items["clean"], dtype=bool))
        self.units.setdefault((*cell, key["variant"]), []).append(rows)

    def add_mining(self, key: dict[str, str], data: dict[str, Any], path: str) -> None:
        units = data.get("units")
        if not isinstance(units, dict) or "intersection" not in units:
            raise ValueError(
                f"{path}: a mining metrics file without per-document counts (`units`): rerun `lem mine run` "
                "(files written before the report's significance tests lack them)"
            )
        cell = ("mining", key["dataset"], key["pair"])
        self._check_units(cell, list(units["units"]), path)
        rows = np.asarray(units["intersection"], dtype=np.float64).reshape(-1, 3)
        self.units.setdefault((*cell, key["variant"]), []).append(rows)

    def add_sentiment(self, key: dict[str, str], data: dict[str, Any], path: str) -> None:
        gold, pred = data.get("test_gold"), data.get("test_pred")
        if not isinstance(gold, list) or not isinstance(pred, list) or len(gold) != len(pred):
            raise ValueError(
                f"{path}: a sentiment metrics file without per-example `test_gold`/`test_pred`: rerun `lem "
                "sentiment finetune`"
            )
        cell = ("sentiment", key["dataset"], key["pair"])
        self._check_units(cell, [str(g) for g in gold], path)
        n_labels = len(data.get("labels") or []) or (max(gold + pred) + 1)
        self.n_labels[cell] = max(self.n_labels.get(cell, 0), n_labels)
        self.units.setdefault((*cell, key["variant"]), []).append(np.asarray([gold, pred], dtype=np.int64))

    def _check_units(self, cell: tuple[str, str, str], ids: list[str], path: str) -> None:
        known = self.unit_ids.setdefault(cell, ids)
        if known != ids:
            raise ValueError(
                f"{path}: its test items differ from another run's of {' '.join(cell)} (expected the same "
                f"{len(known)} items in the same order; got {len(ids)}): the runs were evaluated on different data"
            )

    def rows(self, task: str, dataset: str, pair: str, variant: str) -> np.ndarray | None:
        """(seeds, units, stats) rows of a system for the paired test, None when it has no runs."""
        runs = self.units.get((task, dataset, pair, variant))
        if not runs:
            return None
        if task in ("mining", "curation"):
            return np.stack(runs)
        k = self.n_labels[(task, dataset, pair)]
        return np.stack([stats.macro_f1_counts(r[0], r[1], k) for r in runs])


def comparisons_of(variants: list[str]) -> list[tuple[str, str]]:
    """(a, b) pairs shown: each lem* variant against mlm_tlm, mlm_tlm against base (where both are rows)."""
    out = []
    if REFERENCE in variants:
        out += [(v, REFERENCE) for v in variants if v.startswith("lem")]
        if "base" in variants:
            out.append((REFERENCE, "base"))
    return out


def compare(
    items: Items, variants: list[str], resamples: int = 10_000, seed: int = 0, alpha: float = 0.05
) -> pd.DataFrame:
    """One row per comparison shown: task, dataset, pair, a, b, the pooled values, their difference, the
    bootstrap interval (mining), p, Holm-adjusted p over all rows and `significant` (adjusted p < alpha)."""
    rows = []
    cells = sorted({k[:3] for k in items.units})
    for task, dataset, pair in cells:
        for a, b in comparisons_of(variants):
            ra, rb = (items.rows(task, dataset, pair, v) for v in (a, b))
            if ra is None or rb is None:
                continue
            if task == "mining":
                res = stats.paired_bootstrap(ra, rb, stats.f1_stat, n=resamples, seed=seed)
                unit = "documents"
            elif task == "curation":
                res = stats.approximate_randomisation(ra, rb, stats.ratio_stat, n=resamples, seed=seed)
                unit = "pairs"
            else:
                res = stats.approximate_randomisation(ra, rb, stats.macro_f1_stat, n=resamples, seed=seed)
                unit = "examples"
            rows.append(
                {
                    "task": task,
                    "dataset": dataset,
                    "pair": pair,
                    "metric": items.metric.get((task, dataset, pair), HEADLINE.get(task)),
                    "a": a,
                    "b": b,
                    "value_a": res["a"],
                    "value_b": res["b"],
                    "diff": res["diff"],
                    "low": res.get("low", float("nan")),
                    "high": res.get("high", float("nan")),
                    "p": res["p"],
                    "seeds_a": len(ra),
                    "seeds_b": len(rb),
                    "units": f"{res['n_units']} {unit}",
                    "test": res["method"],
                }
            )
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    table["p_holm"] = stats.holm(table["p"].tolist())
    table["significant"] = table["p_holm"] < alpha
    return table


def intervals(values: pd.DataFrame) -> pd.DataFrame:
    """Mean and t-based 95 % interval over seeds of every (task, dataset, pair, metric, variant) cell."""
    keys = ["task", "dataset", "pair", "metric", "variant"]
    out = []
    for key, part in values.groupby(keys, sort=True):
        iv = stats.mean_interval(part["value"].tolist())
        out.append({**dict(zip(keys, key, strict=True)), "low": iv["low"], "high": iv["high"]})
    return pd.DataFrame(out, columns=[*keys, "low", "high"])


def marks(table: pd.DataFrame) -> dict[tuple[str, str, str, str], str]:
    """(task, dataset, pair, variant) -> a mark for the row compared with its reference: ▲ significantly
    higher, ▼ significantly lower (Holm-adjusted), "" otherwise."""
    out = {}
    for r in table.itertuples() if not table.empty else ():
        if r.significant:
            out[(r.task, r.dataset, r.pair, r.a)] = "▲" if r.diff > 0 else "▼"
    return out


def comparisons_markdown(table: pd.DataFrame, alpha: float) -> list[str]:
    if table.empty:
        return []
    lines = [
        "## Paired comparisons (headline metric per task; pooled over seeds)",
        "",
        f"Each `lem*` variant against `mlm_tlm`, and `mlm_tlm` against `base`. Mining: paired bootstrap over "
        "documents (95 % percentile interval of the difference); sentiment: approximate randomisation over test "
        "examples; curation: approximate randomisation over the corpus's pairs (precision of clean pairs in the "
        "largest kept share; curation ranks with the first pre-training seed). p is two-sided; p (Holm) is "
        f"adjusted over the {len(table)} comparisons shown; ▲/▼ marks a significant difference at {alpha:g} "
        "after the correction, here and in the tables above.",
        "",
        "| task | dataset pair | a | b | a value | b value | a - b | 95 % interval | p | p (Holm) | seeds a/b | units |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in table.itertuples():
        iv = "-" if pd.isna(r.low) else f"[{r.low:+.3f}, {r.high:+.3f}]"
        mark = (" ▲" if r.diff > 0 else " ▼") if r.significant else ""
        lines.append(
            f"| {r.task} | {r.dataset} {r.pair} | {r.a} | {r.b} | {r.value_a:.3f} | {r.value_b:.3f} | "
            f"{r.diff:+.3f}{mark} | {iv} | {r.p:.4f} | {r.p_holm:.4f} | {r.seeds_a}/{r.seeds_b} | {r.units} |"
        )
    return [*lines, ""]
