"""`lem plan power`: how many pre-training seeds and test items each declared comparison needs, from a
finished run's metrics files (every task the report compares), at each family's corrected level.

It reads the run's metrics files as the report does (lem.report.tables.collect), builds the same declared
comparisons (lem.report.comparisons, the config's `evidence` section: families, alpha, power), and for each
comparison with two or more paired seeds plans the two-level test from the 80 % upper confidence bounds of its
variance parts (lem.evidence.power): the power of the run's own design to detect the stated difference at
the family's first Holm threshold (alpha / family size), the difference it detects with the asked power,
and the seeds needed with the run's items and with twice as many.
"""

from __future__ import annotations

import argparse
import glob
import math
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lem.evidence import crossed
from lem.evidence.compare import ALPHA_MIN, EvidenceSettings
from lem.evidence.power import PowerError, plan_comparison
from lem.run.paths import CURATION, MINING, NMT_FILE, RESULTS, SENTIMENT, glob_pattern

# Imported inside functions: lem.report.tables and .comparisons, which load pandas (`lem plan --help` imports
# this module and needs no pandas)

if TYPE_CHECKING:
    from lem.report.comparisons import Items

# each task's metrics files under the run's results folder (`--results`): lem.run.paths' layout as globs
PATTERNS = {
    task: glob_pattern(template, **values).removeprefix(f"{RESULTS}/")
    for task, template, values in (
        ("mining", MINING, {"ext": "metrics.json"}),
        ("sentiment", SENTIMENT, {}),
        ("curation", CURATION, {"name": "metrics.json"}),
        ("nmt", NMT_FILE, {"name": "metrics.json"}),
    )
}
# a difference must lie in the metric's range: F1, macro-F1 and precision in [0, 1], BLEU in points
RANGE = {"mining": 1.0, "sentiment": 1.0, "curation": 1.0, "nmt": 100.0}


def probability(name: str, value: float) -> float:
    if not (math.isfinite(value) and 0 < value < 1):
        raise PowerError(f"{name} {value!r}: expected a probability strictly between 0 and 1")
    return value


def level(name: str, value: float) -> float:
    """A family-wise level planning can answer: in [ALPHA_MIN, 1) (`lem.evidence.compare.ALPHA_MIN`: below it the
    t quantile at the family's Holm threshold, 1 - alpha / family size / 2, is beyond double precision; at
    1e-300 the minimum detectable difference's search never ended)."""
    probability(name, value)
    if value < ALPHA_MIN:
        raise PowerError(
            f"{name} {value!r}: expected a level of at least {ALPHA_MIN:g}: below it the t quantile at the family's "
            "Holm threshold (1 - alpha / family size / 2) is beyond double precision, so no plan can be computed"
        )
    return value


def difference(name: str, value: float, task: str) -> float:
    top = RANGE[task]
    if not (math.isfinite(value) and 0 < value <= top):
        unit = "BLEU points" if task == "nmt" else "a score in [0, 1]"
        raise PowerError(f"{name} {value!r}: expected a difference > 0 and <= {top:g} ({unit})")
    return value


def load_items(results: str) -> tuple[Items, list[str]]:
    """The run's per-item rows of every task (as the report reads them) and the rows (variants) seen."""
    from lem.report import tables

    paths = {task: sorted(glob.glob(str(Path(results) / pattern))) for task, pattern in PATTERNS.items()}
    if not any(paths.values()):
        raise PowerError(f"no metrics files under {results}/ (run the pipeline first, or pass --results)")
    try:
        items = tables.collect(
            mining=paths["mining"], sentiment=paths["sentiment"], curation=paths["curation"], nmt=paths["nmt"]
        ).items
    except ValueError as err:  # a file that is not a metrics file: one line naming it
        raise PowerError(str(err).splitlines()[0]) from None
    variants = sorted({k[3] for k in items.units})
    return items, variants


def power_rows(
    items: Items, variants: list[str], ev: EvidenceSettings, deltas: dict[str, float]
) -> list[dict[str, Any]]:
    """One row per declared comparison with two or more paired seeds: the plan of `plan_comparison` at the
    family's first Holm threshold."""
    from lem.report.comparisons import compare

    table = compare(items, variants, evidence=ev)
    rows = []
    for r in table.itertuples() if not table.empty else ():
        if r.role != "comparison" or r.seeds < 2:
            continue
        cell = (r.task, r.dataset, r.pair)
        statistic = items.statistic(cell)
        _, _, _, d = crossed.paired_item_differences(
            items.runs(*cell, r.a), items.runs(*cell, r.b), statistic
        )
        alpha = ev.alpha / r.family_size
        plan = plan_comparison(d, deltas[r.task], alpha, ev.power)
        rows.append({"family": r.family, "task": r.task, "dataset": r.dataset, "pair": r.pair, "a": r.a,
                     "b": r.b, "alpha": alpha, "delta": deltas[r.task], **plan})  # fmt: skip
    return rows


def check_arguments(a: argparse.Namespace) -> None:
    """Every argument in its range, before anything is read."""
    probability("--power", a.power)
    if a.alpha is not None:
        level("--alpha", a.alpha)
    for t in RANGE:
        difference("--difference" if t != "nmt" else "--bleu-difference",
                   a.bleu_difference if t == "nmt" else a.difference, t)  # fmt: skip


def run_power(a: argparse.Namespace, raw: dict[str, Any]) -> None:
    """`lem plan power` with the config's `evidence` section `raw` (lem.plan reads the config files), read
    through `EvidenceSettings` as the report reads it; --power and --alpha override its power and alpha."""
    check_arguments(a)
    deltas = {t: a.bleu_difference if t == "nmt" else a.difference for t in RANGE}
    try:
        ev = EvidenceSettings.from_dict(raw)
    except ValueError as err:
        raise PowerError(str(err)) from None
    ev = replace(ev, power=a.power, alpha=ev.alpha if a.alpha is None else a.alpha)
    level("--alpha" if a.alpha is not None else "evidence.alpha", ev.alpha)
    items, variants = load_items(a.results)
    rows = power_rows(items, variants, ev, deltas)
    if not rows:
        raise PowerError(f"no declared comparison with two or more paired seeds in {a.results}/")

    def need(n: int | None) -> str:
        return "> 200" if n is None else str(n)

    print(
        f"Two-level test (seeds x items) at each family's first Holm threshold (family-wise alpha {ev.alpha:g}), "
        f"from 80 % upper bounds of the run's variance parts; power to detect a difference of {a.difference:g} "
        f"(NMT: {a.bleu_difference:g} BLEU); seeds for {a.power:.0%} power."
    )
    print(
        "family | task dataset pair | a vs b | observed diff | seeds x items | sd seed / item / residual | "
        "alpha | power now | detects now | seeds needed | with 2x items"
    )
    for r in rows:
        f = ".2f" if r["task"] == "nmt" else ".3f"
        print(
            f"{r['family']} | {r['task']} {r['dataset']} {r['pair']} | {r['a']} vs {r['b']} | {r['diff']:+{f}} | "
            f"{r['seeds']} x {r['items']} | {r['sd_seed']:{f}} / {r['sd_item']:{f}} / {r['sd_res']:{f}} | "
            f"{r['alpha']:.4f} | {r['power']:.2f} | {r['mde']:{f}} | {need(r['seeds_needed'])} | "
            f"{need(r['seeds_needed_2x_items']) if r['items'] > 1 else '-'}"
        )
