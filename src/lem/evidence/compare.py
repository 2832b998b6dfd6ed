"""The report's evidence: intervals over seeds, paired tests between variants, Holm's correction.

Which comparisons are shown (`comparisons_of`): every `lem*` variant against `mlm_tlm`, and `mlm_tlm` against
`base`, on each task's headline metric, per dataset and pair. A variant is a recipe and each pre-training seed
one draw of it, so every comparison is a paired test over pre-training seeds (`lem.evidence.stats.seed_paired_test`):
each seed's score is computed from that seed's own test items (mining: the F1 of its per-document [correct,
mined, gold] counts; sentiment: the mean over fine-tuning seeds of the macro-F1 of its test predictions;
curation: the precision of clean pairs in the largest kept share of its ranking), and seed s of one variant is
paired with seed s of the other (both continue base model s). A cell with fewer than two paired seeds has no
test and no mark. Holm's correction runs over every comparison the report tests, so "significant" means at
family-wise level `alpha` over all of them; the report says how many.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from lem.evidence import stats

# The headline metric of each task with a paired test, and how a run's items are read.
HEADLINE = {"mining": "intersection_f1", "sentiment": "macro_f1"}
REFERENCE = "mlm_tlm"
# How each task's per-run score follows from the column sums of its per-item rows.
STATISTIC = {
    "mining": stats.f1_stat,
    "sentiment": stats.macro_f1_stat,
    "curation": stats.ratio_stat,
    "nmt": stats.ratio_stat,
}
UNIT = {"mining": "documents", "sentiment": "examples", "curation": "pairs", "nmt": "test set"}
# NMT's controls: the oracle ranking (clean pairs first) must beat the random one before any NMT row is compared
NMT_POSITIVE, NMT_NEGATIVE = "oracle", "random"


@dataclass
class Items:
    """A run's per-item rows for the paired tests, keyed by (task, dataset, pair, variant): one array per
    run (seed), all over the same units in the same order."""

    units: dict[tuple[str, str, str, str], list[np.ndarray]] = field(default_factory=dict)
    unit_ids: dict[tuple[str, str, str], list[str]] = field(default_factory=dict)
    n_labels: dict[tuple[str, str, str], int] = field(default_factory=dict)
    metric: dict[tuple[str, str, str], str] = field(default_factory=dict)  # a cell's tested metric
    seeds: dict[tuple[str, str, str, str], list[str]] = field(default_factory=dict)  # one per run

    def _add(self, cell: tuple[str, str, str], key: dict[str, str], rows: np.ndarray) -> None:
        self.units.setdefault((*cell, key["variant"]), []).append(rows)
        self.seeds.setdefault((*cell, key["variant"]), []).append(str(key.get("seed", "")))

    def add_curation(self, key: dict[str, str], data: dict[str, Any], path: str) -> None:
        """A labelled curation ranking: its pairs' ranks and clean flags (`items`), tested on the precision
        of clean pairs in the largest kept share (`keep_fractions`). An unlabelled corpus has no test."""
        from lem.curate import kept_count

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
        self._add(cell, key, stats.kept_precision_counts(kept, np.asarray(items["clean"], dtype=bool)))

    def add_nmt(self, key: dict[str, str], data: dict[str, Any], path: str) -> None:
        """One NMT run's BLEU (the whole test set is its one item; the unit that varies is the seed), in the
        cell of its kept share. no_filter (every pair) is shown, not compared."""
        if key["variant"] == "no_filter":
            return
        cell = ("nmt", f"{key['dataset']} keep {key['share']}", key["pair"])
        self._check_units(cell, ["test set"], path)
        self.metric[cell] = "bleu"
        self._add(cell, key, np.asarray([[float(data["bleu"]), 1.0]]))

    def add_mining(self, key: dict[str, str], data: dict[str, Any], path: str) -> None:
        units = data.get("units")
        if not isinstance(units, dict) or "intersection" not in units:
            raise ValueError(
                f"{path}: a mining metrics file without per-document counts (`units`): rerun `lem mine run` "
                "(files written before the report's significance tests lack them)"
            )
        cell = ("mining", key["dataset"], key["pair"])
        self._check_units(cell, list(units["units"]), path)
        self._add(cell, key, np.asarray(units["intersection"], dtype=np.float64).reshape(-1, 3))

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
        self._add(cell, key, np.asarray([gold, pred], dtype=np.int64))

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
        if task in ("mining", "curation", "nmt"):
            return np.stack(runs)
        k = self.n_labels[(task, dataset, pair)]
        return np.stack([stats.macro_f1_counts(r[0], r[1], k) for r in runs])

    def seed_scores(self, task: str, dataset: str, pair: str, variant: str) -> dict[str, float]:
        """Pre-training seed -> the system's score on the cell's tested metric, each computed from that
        seed's own items (several runs of one seed, e.g. sentiment's fine-tuning seeds: their mean)."""
        rows = self.rows(task, dataset, pair, variant)
        if rows is None:
            return {}
        statistic = STATISTIC[task]
        per_run = np.asarray(statistic(rows.sum(axis=1)), dtype=np.float64)
        by_seed: dict[str, list[float]] = {}
        for seed, value in zip(self.seeds[(task, dataset, pair, variant)], per_run, strict=True):
            by_seed.setdefault(seed, []).append(float(value))
        return {seed: float(np.mean(v)) for seed, v in by_seed.items()}


def comparisons_of(variants: list[str]) -> list[tuple[str, str]]:
    """(a, b) pairs shown: each lem* variant against mlm_tlm, mlm_tlm against base (where both are rows)."""
    out = []
    if REFERENCE in variants:
        out += [(v, REFERENCE) for v in variants if v.startswith("lem")]
        if "base" in variants:
            out.append((REFERENCE, "base"))
    return out


def _row(items: Items, cell: tuple[str, str, str], a: str, b: str, sa: dict, sb: dict, res: dict) -> dict:
    task, dataset, pair = cell
    return {
        "task": task,
        "dataset": dataset,
        "pair": pair,
        "metric": items.metric.get(cell, HEADLINE.get(task)),
        "a": a,
        "b": b,
        "role": "comparison",
        "value_a": res["a"],
        "sd_a": res["sd_a"],
        "value_b": res["b"],
        "sd_b": res["sd_b"],
        "diff": res["diff"],
        "low": res["low"],
        "high": res["high"],
        "effect_size": res["effect_size"],
        "p": res["p"],
        "seeds": res["n_seeds"],
        "scores_a": " ".join(f"{s}:{sa[s]:.6f}" for s in res["seeds"]),
        "scores_b": " ".join(f"{s}:{sb[s]:.6f}" for s in res["seeds"]),
        "units": f"{len(items.unit_ids[cell])} {UNIT[task]}",
        "test": res["method"] if res["n_seeds"] >= 2 else "none (fewer than 2 paired seeds)",
    }


def compare(
    items: Items,
    variants: list[str],
    alpha: float = 0.05,
    no_signal: dict[tuple[str, str, str], str] | None = None,
) -> pd.DataFrame:
    """One row per comparison shown: task, dataset, pair, a, b, the means over paired pre-training seeds and
    their seed standard deviations, the difference with its 95 % interval, the effect size (difference in
    pooled seed standard deviations), p of the paired t-test over seeds, the per-seed scores (so anyone can
    redo the test from the metrics files), Holm-adjusted p over every tested comparison and `significant`
    (adjusted p < alpha). A row with fewer than two paired seeds is listed with p NaN and no mark.

    NMT cells (one per kept share) first test their control, role `control`: the oracle ranking against the
    random one, one-sided at `alpha` with no correction (a control is a precondition, not a claim). Where it
    fails, or the cell has no oracle, the NMT task shows no signal there and its comparisons are listed
    untested. A cell in `no_signal` ((task, dataset, pair) -> why: a control of the evaluation chain failed
    there, `lem.evidence.controls.no_signal_cells`) lists its comparisons untested too."""
    rows = []
    cells = sorted({k[:3] for k in items.units})
    for cell in cells:
        task, dataset, pair = cell
        blocked = None
        if cell in (no_signal or {}):  # a failed control of the cell (lem.evidence.controls.no_signal_cells)
            blocked = f"none (no signal: {no_signal[cell]})"
        if task == "nmt":
            so, sr = (items.seed_scores(*cell, v) for v in (NMT_POSITIVE, NMT_NEGATIVE))
            if so and sr:
                res = stats.seed_paired_test(so, sr)
                row = _row(items, cell, NMT_POSITIVE, NMT_NEGATIVE, so, sr, res)
                one_sided = res["p"] / 2 if res["diff"] > 0 else 1 - res["p"] / 2
                row.update(role="control", p=one_sided, test=f"{res['method']}, one-sided (control)")
                rows.append(row)
                if not one_sided < alpha:  # NaN (fewer than 2 seeds) fails too
                    blocked = "none (no signal: the oracle does not beat random)"
            else:
                blocked = "none (no positive control: curation.nmt.oracle is off)"
        for a, b in comparisons_of(variants):
            sa, sb = (items.seed_scores(*cell, v) for v in (a, b))
            if not sa or not sb:
                continue
            row = _row(items, cell, a, b, sa, sb, stats.seed_paired_test(sa, sb))
            if blocked:
                row.update(p=float("nan"), test=blocked)
            rows.append(row)
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    tested = table["p"].notna() & (table["role"] == "comparison")
    table["p_holm"] = float("nan")
    if tested.any():
        table.loc[tested, "p_holm"] = stats.holm(table.loc[tested, "p"].tolist())
    table["significant"] = table["p_holm"].lt(alpha) & tested
    control = table["role"] == "control"
    table.loc[control, "significant"] = table.loc[control, "p"].lt(alpha)
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
        if r.significant and r.role == "comparison":
            out[(r.task, r.dataset, r.pair, r.a)] = "▲" if r.diff > 0 else "▼"
    return out


def _num(x: float, fmt: str) -> str:
    return "-" if pd.isna(x) else format(x, fmt)


def comparisons_markdown(table: pd.DataFrame, alpha: float) -> list[str]:
    if table.empty:
        return []
    n_tested = int((table["p"].notna() & (table["role"] == "comparison")).sum())
    lines = [
        "## Paired comparisons (headline metric per task; paired over pre-training seeds)",
        "",
        "Each `lem*` variant against `mlm_tlm`, and `mlm_tlm` against `base`: a paired t-test over pre-training "
        "seeds (seed s of both rows continues base model s), each seed's score computed from its own test items "
        "(mining: F1 of its per-document counts; sentiment: macro-F1, mean over fine-tuning seeds; curation: "
        "precision of clean pairs in the largest kept share). Means and seed s.d. over the paired seeds; "
        "a - b with its 95 % t interval; effect size: a - b in pooled seed standard deviations; p two-sided; "
        f"p (Holm) adjusted over the {n_tested} comparisons tested (every mark the report shows); ▲/▼ marks a "
        f"significant difference at {alpha:g} after the correction, here and in the tables above. A row with "
        "fewer than two paired seeds has no test and no mark. NMT: BLEU per kept share, compared only where its "
        "control (oracle vs random, one-sided, uncorrected, marked *control*) shows signal. Per-seed scores: "
        "comparisons.tsv.",
        "",
        "| task | dataset pair | a | b | a mean (seed s.d.) | b mean (seed s.d.) | a - b | 95 % interval | "
        "effect size | p | p (Holm) | seeds | units |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in table.itertuples():
        iv = "-" if pd.isna(r.low) else f"[{r.low:+.3f}, {r.high:+.3f}]"
        mark = (" ▲" if r.diff > 0 else " ▼") if r.significant and r.role == "comparison" else ""
        if r.role == "control":
            mark = " (control: signal)" if r.significant else " (control: no signal)"
        lines.append(
            f"| {r.task} | {r.dataset} {r.pair} | {r.a} | {r.b} | {r.value_a:.3f} ({_num(r.sd_a, '.3f')}) | "
            f"{r.value_b:.3f} ({_num(r.sd_b, '.3f')}) | {r.diff:+.3f}{mark} | {iv} | "
            f"{_num(r.effect_size, '+.2f')} | {_num(r.p, '.4f')} | {_num(r.p_holm, '.4f')} | {r.seeds} | "
            f"{r.units} |"
        )
    return [*lines, ""]
