"""The report's paired comparisons: each declared comparison's two-level test on the run's per-item rows,
Holm within each family, and its verdict.

What is compared is declared before the run (config `evidence.families`, `lem.evidence.compare`), never chosen
by the data:
- *primary*: the paper's question, by default each `lem*` variant against `mlm_tlm` on mining
  intersection F1;
- *secondary*: the other tasks (sentiment macro-F1, curation precision, NMT BLEU) for the same pairs;
- *exploratory*: the checks and ablations, by default `mlm_tlm` against `base` on every task (the criterion
  the generated world was tuned on, so never a finding).
Holm's correction runs within each family over every comparison the family declares for the run's cells; a
comparison left untested (fewer than two paired seeds, a failed control: "no signal") still counts in its
family's size with p = 1, so a failed control never makes the other tests easier.

Each comparison is `lem.evidence.crossed.two_level_test`: the pre-training seeds (each with its fine-tuning
seeds, for sentiment) and the test items (documents, examples, pairs, sentences) both resampled by their
mean squares. Each row carries both means with their seed s.d., the per-seed scores, the difference with its
unadjusted `evidence.confidence` interval (`low`, `high`, `confidence`), both effect sizes (d_av over the
mean seed s.d., d_z over the s.d. of the per-seed differences), p and Holm's p within the family, the two
one-sided tests against the declared margin (`evidence.margin`) and the minimum detectable difference
(`evidence.power`, in `power`, at the family's first Holm threshold), and a verdict: *higher* / *lower*
(Holm's p < alpha), *equivalent* (TOST's Holm p < alpha), else *inconclusive* (an untested row too: its test
says why). The intervals the verdict is read from, from the test's own t and degrees of freedom: `holm_low`,
`holm_high` at `holm_level`, 1 - alpha / (m - j + 1) of the Holm step j that decided the row (the step where
Holm stopped, for a row it did not reject), which excludes 0 exactly when the verdict is higher or lower; and
`tost_low`, `tost_high` at `tost_level`, 1 - 2 x the TOST Holm step's alpha, inside +-margin exactly when
TOST's Holm p is below alpha. A difference with no spread (`spread`: identical on every seed and item, or the
same difference on every one) is tested exactly (`lem.evidence.crossed`). The README's and the report's
sentences about results are generated from these words (`lem.report.verdicts`).

NMT cells (one per kept share) first test their control, role `control`: the oracle ranking against the
random one, one-sided at `alpha` with no correction (a precondition, not a claim); where it fails the NMT
comparisons of that cell are listed untested ("no signal") and keep their place in the family.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from lem.curate import kept_count
from lem.data.news import document_site
from lem.evidence import crossed, stats
from lem.evidence.compare import FAMILIES, EvidenceSettings, declared
from lem.nmt.bleu import bleu_from_sums

# The headline metric of each task with a paired test, and how a run's items are read.
HEADLINE = {"mining": "intersection_f1", "sentiment": "macro_f1"}
# How each task's per-run score follows from the column sums of its per-item rows.
STATISTIC = {
    "mining": stats.f1_stat,
    "sentiment": stats.macro_f1_stat,
    "curation": stats.ratio_stat,
    "nmt": stats.ratio_stat,  # a run without per-sentence statistics: its BLEU is its one item
}
UNIT = {"mining": "documents", "sentiment": "examples", "curation": "pairs", "nmt": "sentences"}
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
    # a pooled news set's documents `<site>/<doc>` (lem.data.news.load_sites): each item's site, its stratum
    strata: dict[tuple[str, str, str], list[str]] = field(default_factory=dict)

    def _add(self, cell: tuple[str, str, str], key: dict[str, str], rows: np.ndarray) -> None:
        self.units.setdefault((*cell, key["variant"]), []).append(rows)
        self.seeds.setdefault((*cell, key["variant"]), []).append(str(key.get("seed", "")))

    def add_curation(self, key: dict[str, str], data: dict[str, Any], path: str) -> None:
        """A labelled curation ranking: its pairs' ranks and clean flags (`items`), tested on the precision
        of clean pairs in the largest kept share (`keep_fractions`). An unlabelled corpus has no test."""
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
        """One NMT run in the cell of its kept share: its per-sentence BLEU statistics (`items`: ids and the
        10 columns of `lem.nmt.bleu.sentence_stats`), so the test sentences are resampled; a run written
        without them has its corpus BLEU as its one item (seeds only, said in the row's test). no_filter
        (every pair) is shown, not compared."""
        if key["variant"] == "no_filter":
            return
        cell = ("nmt", f"{key['dataset']} keep {key['share']}", key["pair"])
        per_sentence = data.get("items")
        if isinstance(per_sentence, dict) and per_sentence.get("stats"):
            ids = [str(i) for i in per_sentence.get("ids") or range(len(per_sentence["stats"]))]
            rows = np.asarray(per_sentence["stats"], dtype=np.float64)
            if rows.ndim != 2 or rows.shape != (len(ids), 10):
                raise ValueError(
                    f"{path}: `items.stats` must hold one row of 10 BLEU statistics per id in `items.ids`, got "
                    f"shape {rows.shape} for {len(ids)} ids"
                )
            self._check_units(cell, ids, path)
        else:
            self._check_units(cell, ["test set"], path)
            rows = np.asarray([[float(data["bleu"]), 1.0]])
        self.metric[cell] = "bleu"
        self._add(cell, key, rows)

    def add_mining(self, key: dict[str, str], data: dict[str, Any], path: str) -> None:
        units = data.get("units")
        if not isinstance(units, dict) or "intersection" not in units:
            raise ValueError(
                f"{path}: a mining metrics file without per-document counts (`units`): rerun `lem mine run` "
                "(files written before the report's significance tests lack them)"
            )
        cell = ("mining", key["dataset"], key["pair"])
        self._check_units(cell, list(units["units"]), path)
        sites = [document_site(u) for u in units["units"]]
        if any(sites):
            self.strata[cell] = sites
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

    def statistic(self, cell: tuple[str, str, str]) -> stats.Statistic:
        """The statistic of a cell's rows: BLEU from per-sentence statistics where NMT runs kept them."""
        if cell[0] == "nmt" and self.unit_ids.get(cell, ["test set"]) != ["test set"]:
            return bleu_from_sums
        return STATISTIC[cell[0]]

    def runs(self, task: str, dataset: str, pair: str, variant: str) -> dict[str, list[np.ndarray]]:
        """Pre-training seed -> that seed's runs' (units, stats) rows (several for sentiment's fine-tuning
        seeds): what `lem.evidence.crossed.two_level_test` reads."""
        rows = self.rows(task, dataset, pair, variant)
        out: dict[str, list[np.ndarray]] = {}
        if rows is None:
            return out
        for seed, r in zip(self.seeds[(task, dataset, pair, variant)], rows, strict=True):
            out.setdefault(seed, []).append(r)
        return out

    def seed_scores(self, task: str, dataset: str, pair: str, variant: str) -> dict[str, float]:
        """Pre-training seed -> the system's score on the cell's tested metric, each computed from that
        seed's own items (several runs of one seed, e.g. sentiment's fine-tuning seeds: their mean)."""
        rows = self.rows(task, dataset, pair, variant)
        if rows is None:
            return {}
        statistic = self.statistic((task, dataset, pair))
        per_run = np.asarray(statistic(rows.sum(axis=1)), dtype=np.float64)
        by_seed: dict[str, list[float]] = {}
        for seed, value in zip(self.seeds[(task, dataset, pair, variant)], per_run, strict=True):
            by_seed.setdefault(seed, []).append(float(value))
        return {seed: float(np.mean(v)) for seed, v in by_seed.items()}


def _scores(seeds: list[str], values: list[float]) -> str:
    return " ".join(f"{s}:{v:.6f}" for s, v in zip(seeds, values, strict=True))


def _row(
    items: Items, cell: tuple[str, str, str], a: str, b: str, family: str, res: dict, margin: float
) -> dict:
    task, dataset, pair = cell
    single = items.unit_ids[cell] == ["test set"]
    return {
        "task": task,
        "dataset": dataset,
        "pair": pair,
        "metric": items.metric.get(cell, HEADLINE.get(task)),
        "family": family,
        "a": a,
        "b": b,
        "role": "comparison" if family in FAMILIES else "control",
        "value_a": res["a"],
        "sd_a": res["sd_a"],
        "value_b": res["b"],
        "sd_b": res["sd_b"],
        "diff": res["diff"],
        "low": res["low"],
        "high": res["high"],
        "se": res["se"],
        "df": res["df"],
        "d_av": res["d_av"],
        "d_z": res["d_z"],
        "p": res["p"],
        "margin": margin,
        "p_tost": res["p_tost"],
        "sd_seed": res["sd_seed"],
        "sd_item": res["sd_item"],
        "spread": res.get("spread", ""),
        "seeds": res["n_seeds"],
        "scores_a": _scores(res["seeds"], res["scores_a"]),
        "scores_b": _scores(res["seeds"], res["scores_b"]),
        "units": "test set (corpus BLEU)" if single else f"{len(items.unit_ids[cell])} {UNIT[task]}",
        "test": (res["method"] + (", seeds only: no per-sentence statistics" if single else ""))
        if res["n_seeds"] >= 2
        else "none (fewer than 2 paired seeds)",
    }


def compare(
    items: Items,
    variants: list[str],
    *,
    evidence: EvidenceSettings | None = None,
    no_signal: dict[tuple[str, str, str], str] | None = None,
) -> pd.DataFrame:
    """One row per declared comparison with data (see the module's doc), plus NMT's control rows: the
    columns of `_row`, then `p_holm`, `p_tost_holm`, `family_size`, `mde`, `confidence` (of `low`, `high`),
    `power` (of `mde`), the decision intervals (`holm_level`, `holm_low`, `holm_high`, `tost_level`,
    `tost_low`, `tost_high`), `verdict` and `significant` (higher or lower), under `evidence` (the config's
    section; None: its defaults). A cell in `no_signal` ((task, dataset, pair) -> why: a control of the
    evaluation chain failed there) lists its comparisons untested, each still counted in its family."""
    ev = evidence if evidence is not None else EvidenceSettings()
    alpha = ev.alpha
    plan = declared(variants, ev.families)
    rows = []
    for cell in sorted({k[:3] for k in items.units}):
        task = cell[0]
        statistic = items.statistic(cell)
        margin = ev.margin_of(task)
        blocked = f"none (no signal: {no_signal[cell]})" if cell in (no_signal or {}) else None
        if task == "nmt":
            ro, rr = (items.runs(*cell, v) for v in (NMT_POSITIVE, NMT_NEGATIVE))
            if ro and rr:
                res = crossed.two_level_test(ro, rr, statistic, margin, ev.confidence)
                row = _row(items, cell, NMT_POSITIVE, NMT_NEGATIVE, "control", res, margin)
                one_sided = res["p"] / 2 if res["diff"] > 0 else 1 - res["p"] / 2
                row.update(p=one_sided, test=f"{row['test']}, one-sided (control)")
                rows.append(row)
                if not one_sided < alpha and blocked is None:  # NaN (fewer than 2 seeds) fails too
                    blocked = "none (no signal: the oracle does not beat random)"
            elif blocked is None:
                blocked = "none (no positive control: curation.nmt.oracle is off)"
        for family, a, b, t in plan:
            if t != task:
                continue
            ra, rb = items.runs(*cell, a), items.runs(*cell, b)
            if not ra or not rb:
                continue
            row = _row(
                items,
                cell,
                a,
                b,
                family,
                crossed.two_level_test(
                    ra, rb, statistic, margin, ev.confidence, strata=items.strata.get(cell)
                ),
                margin,
            )
            if blocked:
                row.update(p=float("nan"), p_tost=float("nan"), test=blocked)
            rows.append(row)
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    nan = float("nan")
    table["p_holm"] = nan
    table["p_tost_holm"] = nan
    table["family_size"] = 0
    table["mde"] = nan
    table["confidence"] = ev.confidence
    table["power"] = ev.power
    for col in ("holm_level", "holm_low", "holm_high", "tost_level", "tost_low", "tost_high"):
        table[col] = nan
    for family in FAMILIES:
        part = table.index[table["family"] == family]
        if not len(part):
            continue
        m = len(part)
        table.loc[part, "family_size"] = m
        # an untested comparison keeps its place: p = 1 (the family's size is the config's, not the data's)
        for col, out in (("p", "p_holm"), ("p_tost", "p_tost_holm")):
            adjusted = stats.holm(table.loc[part, col].fillna(1.0).clip(0, 1).tolist())
            table.loc[part, out] = np.where(table.loc[part, col].notna(), adjusted, np.nan)
        for i in part:
            table.loc[i, "mde"] = crossed.minimum_detectable(
                float(table.loc[i, "se"]), float(table.loc[i, "df"]), alpha / m, ev.power
            )
        _decision_intervals(table, part, alpha)
    table["verdict"] = [_verdict(r, alpha) for r in table.itertuples()]
    table["significant"] = table["verdict"].isin(["higher", "lower"])
    control = table["role"] == "control"
    table.loc[control, "significant"] = table.loc[control, "p"].lt(alpha)
    return table


def _decision_intervals(table: pd.DataFrame, part: pd.Index, alpha: float) -> None:
    """The intervals one family's verdicts are read from (`lem.evidence.crossed.holm_step_alpha`), in place:
    each tested row's t-interval at the level of the Holm step that decided it (excludes 0 exactly when
    `p_holm` < alpha) and its TOST interval at 1 - 2 x its TOST Holm step's alpha (inside +-margin exactly
    when `p_tost_holm` < alpha); NaN for an untested row."""
    rows = table.loc[part]
    tested = rows["p"].notna().to_numpy()
    diff, se, df = (rows[c].to_numpy(dtype=float) for c in ("diff", "se", "df"))
    for p, p_holm, prefix, interval, width in (
        ("p", "p_holm", "holm", crossed.t_interval, 1),
        ("p_tost", "p_tost_holm", "tost", crossed.tost_interval, 2),
    ):
        step = crossed.holm_step_alpha(
            rows[p].to_numpy(dtype=float), rows[p_holm].to_numpy(dtype=float), alpha
        )
        step = np.where(tested, step, np.nan)
        low, high = interval(diff, se, df, step)
        table.loc[part, f"{prefix}_level"] = 1 - width * step
        table.loc[part, f"{prefix}_low"] = low
        table.loc[part, f"{prefix}_high"] = high


def _verdict(r: Any, alpha: float) -> str:
    if r.role == "control":
        return "signal" if r.p < alpha else "no signal"
    if pd.isna(r.p_holm):
        return "inconclusive"
    if r.p_holm < alpha:
        return "higher" if r.diff > 0 else "lower"
    if pd.notna(r.p_tost_holm) and r.p_tost_holm < alpha:
        return "equivalent"
    return "inconclusive"


def intervals(values: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """Mean and t-based `confidence` interval over seeds of every (task, dataset, pair, metric, variant) cell
    (`lem.report.intervals.report_intervals` sets the report's level)."""
    keys = ["task", "dataset", "pair", "metric", "variant"]
    out = []
    for key, part in values.groupby(keys, sort=True):
        iv = stats.mean_interval(part["value"].tolist(), confidence)
        out.append({**dict(zip(keys, key, strict=True)), "low": iv["low"], "high": iv["high"]})
    return pd.DataFrame(out, columns=[*keys, "low", "high"])
