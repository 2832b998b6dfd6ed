"""Power of the two-level comparisons: how many pre-training seeds and test items a difference needs.

The report tests each declared comparison by `lem.evidence.crossed.two_level_test`, whose variance of the
mean difference has three parts, estimated from a finished run's seeds x items table of differences by its
mean squares (MS_seed, MS_item, MS_res; see lem.evidence.crossed):
- the seed part s2_seed = (MS_seed - MS_res) / I: what two draws of a recipe differ by beyond item noise;
- the shared item part s2_item = (MS_item - MS_res) / S: the recipe-by-item part every seed shares;
- the residual s2_res = MS_res: item noise independent across seeds.
A design with S' seeds and I' items then has var(mean d) = s2_seed / S' + s2_item / I' + s2_res / (S' I'), on
Satterthwaite's degrees of freedom of the expected mean squares. A run of three seeds estimates each mean
square on few degrees of freedom, so the plan uses one-sided upper confidence bounds (`upper`, 80 % by
default: MS df / chi2_{0.2, df}), not the point values, and never lets a part below 0.

Power is that of the two-sided t-test at the family's first Holm threshold (alpha / family size: the level
the smallest p of a family must reach) for a true difference delta: P(|T'| > t_crit) for T' noncentral t with
noncentrality delta / se (Cohen 1988, ch. 2; Card et al., EMNLP 2020, "With Little Power Comes Great
Responsibility"), integrated over its chi-square part. `plan_comparison` gives the power of the run's own
design and the seeds needed with its items and with twice as many; `lem plan power` (lem.plan.power) prints
it for every declared comparison of a finished run.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from lem.evidence import crossed

# Imported inside functions: scipy (`lem plan --help` imports this module and needs no scipy)


class PowerError(ValueError):
    """No comparison to size, or an argument out of its range."""


power_at = (
    crossed.power_at
)  # the two-level test's exact power (lem.evidence.crossed): planning reads it there


def power_of(delta: float, sd_diff: float, seeds: int, alpha: float = 0.05) -> float:
    """Power of a paired t-test over `seeds` per-seed differences of standard deviation `sd_diff` (the
    one-level special case: se = sd / sqrt(seeds), seeds - 1 degrees of freedom)."""
    if seeds < 2:
        return float("nan")
    return power_at(delta, sd_diff / math.sqrt(seeds), seeds - 1, alpha)


def components(d: np.ndarray) -> dict[str, float]:
    """The mean squares of a run's seeds x items table of paired differences, with their sizes."""
    d = np.asarray(d, dtype=np.float64)
    if d.ndim != 2 or d.shape[0] < 2:
        raise PowerError(f"a seeds x items table with at least 2 seeds is needed, got shape {d.shape}")
    m = crossed.crossed_moments(d)
    return {
        "seeds": d.shape[0],
        "items": d.shape[1],
        "diff": float(m["mean"]),
        "ms_seed": float(m["ms_seed"]),
        "ms_item": float(m["ms_item"]),
        "ms_res": float(m["ms_res"]),
    }


def upper(c: dict[str, float], level: float = 0.8) -> dict[str, float]:
    """The variance parts from one-sided `level` upper confidence bounds of the mean squares (MS df /
    chi2_{1-level, df}), the residual subtracted at its point value, each part floored at 0."""
    from scipy.stats import chi2

    s, i = c["seeds"], c["items"]
    df = {"ms_seed": s - 1, "ms_item": max(i - 1, 1), "ms_res": max((s - 1) * (i - 1), 1)}
    up = {k: c[k] * df[k] / float(chi2.ppf(1 - level, df[k])) for k in df}
    if i == 1:
        up["ms_item"], up["ms_res"] = 0.0, 0.0
    return {
        "var_seed": max(up["ms_seed"] - c["ms_res"], 0.0) / i,
        "var_item": max(up["ms_item"] - c["ms_res"], 0.0) / s,
        "var_res": up["ms_res"],
        "items": i,
    }


def planned(parts: dict[str, float], seeds: int, items: int) -> tuple[float, float]:
    """(se, df) of the two-level test's mean difference with `seeds` seeds and `items` items, from the
    variance parts (`upper`): the expected mean squares and Satterthwaite's degrees of freedom."""
    if items == 1 or parts["items"] == 1:  # one item per run (corpus BLEU without per-sentence statistics)
        var = parts["var_seed"] + parts["var_res"]
        return math.sqrt(var / seeds), float(seeds - 1)
    a = items * parts["var_seed"] + parts["var_res"]
    b = seeds * parts["var_item"] + parts["var_res"]
    c = parts["var_res"]
    total = a + b - c
    den = a**2 / (seeds - 1) + b**2 / (items - 1) + c**2 / ((seeds - 1) * (items - 1))
    df = total**2 / den if den > 0 else float(seeds - 1)
    if a >= 0.5 * total:  # as the test: the seed term's own degrees of freedom where it dominates
        df = float(seeds - 1)
    return math.sqrt(max(total, 0.0) / (seeds * items)), df


def seeds_needed(
    parts: dict[str, float], delta: float, alpha: float, target: float, items: int, max_seeds: int = 200
) -> int | None:
    """The fewest seeds (>= 2) whose two-level test reaches `target` power with `items` items, None beyond
    `max_seeds`. Power grows with seeds, so a bisection finds it in about 8 power integrals (a scan of every
    count took past 100 s on `--difference 1e-9` or `--power 0.999999`)."""

    def enough(seeds: int) -> bool:
        se, df = planned(parts, seeds, items)
        return power_at(delta, se, df, alpha) >= target

    if not enough(max_seeds):
        return None
    lo, hi = 1, max_seeds  # enough(hi); lo is below the fewest (one seed is never a design)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if enough(mid):
            hi = mid
        else:
            lo = mid
    return hi


def plan_comparison(
    d: np.ndarray, delta: float, alpha: float, target: float = 0.8, level: float = 0.8
) -> dict[str, Any]:
    """For one comparison's seeds x items table `d`: the variance parts (point and upper), the power of the
    run's own design at `delta`, and the seeds needed for `target` power with its items and twice as many."""
    c = components(d)
    parts = upper(c, level)
    s, i = c["seeds"], c["items"]
    se, df = planned(parts, s, i)
    return {
        **c,
        "sd_seed": math.sqrt(parts["var_seed"]),
        "sd_item": math.sqrt(parts["var_item"]),
        "sd_res": math.sqrt(parts["var_res"]),
        "power": power_at(delta, se, df, alpha),
        "mde": crossed.minimum_detectable(se, df, alpha, target),
        "seeds_needed": seeds_needed(parts, delta, alpha, target, i),
        "seeds_needed_2x_items": seeds_needed(parts, delta, alpha, target, 2 * i) if i > 1 else None,
    }
