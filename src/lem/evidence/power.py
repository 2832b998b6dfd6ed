"""Power of the seed-level comparisons: how many pre-training seeds (and test documents) a difference needs.

The report compares two variants by a paired t-test over pre-training seeds (`lem.evidence.stats.seed_paired_test`).
Its power depends on the standard deviation of the per-seed differences d_s = a_s - b_s, which has two parts:
- the *item* part: the test-set noise of one seed's difference, which shrinks as 1 / documents (estimated
  per seed by a bootstrap over that seed's documents, then averaged over seeds);
- the *seed* part: what two pre-trainings of one recipe differ by beyond that (the between-seed variance of
  d_s minus the item part, floored at 0).
So var(d_s; m documents) = var_seed + var_item * n / m for a run with n documents, and the power of the
two-sided paired t-test with S seeds at level alpha for a true difference delta is that of a noncentral t
with S - 1 degrees of freedom and noncentrality delta sqrt(S) / sd(d_s) (Cohen 1988, ch. 2; the
approach of Card et al., EMNLP 2020, "With Little Power Comes Great Responsibility", applied to seeds).

`simulate_mining` draws per-seed, per-document counts of two recipes for the calibration of the test
(`bench/stats_calibration.py` and tests/test_stats.py): each recipe's skill moves per seed by a normal draw
of standard deviation `seed_sd` (independent for the two recipes: the worst case for a paired test), each
document's links are found with that skill plus a shared document difficulty.

`lem plan power` reads a finished run's mining metrics files and prints, for every comparison the report
makes, the estimated variance parts, the power of the run's own design and the seeds needed for 80 % power
at a given difference, with the run's documents and with twice as many.
"""

from __future__ import annotations

import argparse
import glob
import math
from typing import Any

import numpy as np

from lem.evidence import stats


class PowerError(ValueError):
    """No comparison to size: no mining metrics files, or none with two paired seeds."""


def power_of(delta: float, sd_diff: float, seeds: int, alpha: float = 0.05) -> float:
    """Power of the two-sided paired t-test over `seeds` seeds at level `alpha` to detect a true mean
    difference `delta` when the per-seed differences have standard deviation `sd_diff`: P(|T'| > t_crit) for
    T' noncentral t with seeds - 1 degrees of freedom and noncentrality delta sqrt(seeds) / sd_diff,
    integrated over its chi-square part (T' = (Z + ncp) / sqrt(V / df)); scipy's nct loses precision for
    few degrees of freedom and a large noncentrality, this does not."""
    from scipy import integrate
    from scipy.stats import chi2, norm
    from scipy.stats import t as student_t

    if seeds < 2:
        return float("nan")
    if sd_diff <= 0:
        return 1.0 if delta != 0 else alpha
    df = seeds - 1
    crit = float(student_t.ppf(1 - alpha / 2, df))
    ncp = abs(delta) * math.sqrt(seeds) / sd_diff

    def at(v: float) -> float:
        c = crit * math.sqrt(v / df)
        return (norm.cdf(ncp - c) + norm.cdf(-ncp - c)) * chi2.pdf(v, df)

    value, _ = integrate.quad(at, 0, np.inf, limit=200)
    return float(min(1.0, max(0.0, value)))


def seeds_needed(
    delta: float, sd_diff: float, alpha: float = 0.05, target: float = 0.8, max_seeds: int = 200
) -> int | None:
    """The fewest seeds (>= 2) whose paired t-test reaches `target` power, None beyond `max_seeds`."""
    for s in range(2, max_seeds + 1):
        if power_of(delta, sd_diff, s, alpha) >= target:
            return s
    return None


def variance_parts(
    rows_a: np.ndarray,
    rows_b: np.ndarray,
    statistic: stats.Statistic = stats.f1_stat,
    n: int = 2000,
    seed: int = 0,
) -> dict[str, float]:
    """The seed and item parts of var(d_s) from (seeds, units, stats) rows of two systems over the same
    units, paired by seed (row i of both is seed i). Item part: per seed, the variance of d_s over `n`
    bootstrap resamples of the units (the same units for both systems), averaged over seeds. Seed part: the
    sample variance of d_s over seeds minus the item part, floored at 0."""
    a, b = np.asarray(rows_a, np.float64), np.asarray(rows_b, np.float64)
    if a.shape != b.shape or a.ndim != 3:
        raise ValueError(
            f"variance_parts: expected two (seeds, units, stats) arrays of one shape, got {a.shape}, {b.shape}"
        )
    seeds, units = a.shape[:2]
    d = np.asarray(statistic(a.sum(axis=1))) - np.asarray(statistic(b.sum(axis=1)))
    rng = np.random.default_rng(seed)
    item = []
    for s in range(seeds):
        w = rng.multinomial(units, np.full(units, 1 / units), size=n).astype(np.float64)
        item.append(float(np.var(statistic(w @ a[s]) - statistic(w @ b[s]), ddof=1)))
    var_item = float(np.mean(item))
    var_total = float(np.var(d, ddof=1)) if seeds > 1 else float("nan")
    return {
        "seeds": seeds,
        "units": units,
        "diff": float(d.mean()),
        "var_total": var_total,
        "var_item": var_item,
        "var_seed": max(0.0, var_total - var_item) if seeds > 1 else float("nan"),
    }


def sd_at(parts: dict[str, float], units: int | None = None) -> float:
    """sd(d_s) with `units` test units (the run's own when None): var_seed + var_item * n / units."""
    m = units or parts["units"]
    return math.sqrt(parts["var_seed"] + parts["var_item"] * parts["units"] / m)


# ---------------------------------------------------------------- simulation (calibration, power)


def simulate_mining(
    rng: np.random.Generator,
    sims: int,
    seeds: int,
    docs: int,
    seed_sd: float,
    delta: float = 0.0,
    skill: float = 0.3,
    links_per_doc: float = 6.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Two recipes' per-seed, per-document mining counts, shape (sims, seeds, docs, 3) each: [correct,
    mined, gold] with one link mined per gold link, so F1 = recall. Recipe a's skill is skill + delta, b's
    skill; each (recipe, seed) adds a normal draw of sd `seed_sd`; each document a shared difficulty (sd
    0.1); each gold link is found with the clipped sum. Gold links per document: 1 + Poisson(links - 1)."""
    gold = 1 + rng.poisson(links_per_doc - 1, size=(sims, 1, docs))
    hard = rng.normal(0, 0.1, size=(sims, 1, docs))

    def recipe(level: float) -> np.ndarray:
        p = np.clip(level + rng.normal(0, seed_sd, size=(sims, seeds, 1)) + hard, 0.01, 0.99)
        correct = rng.binomial(np.broadcast_to(gold, p.shape), p)
        g = np.broadcast_to(gold, correct.shape)
        return np.stack([correct, g, g], axis=-1).astype(np.float64)

    return recipe(skill + delta), recipe(skill)


def rejection_rate(a: np.ndarray, b: np.ndarray, alpha: float = 0.05) -> float:
    """The share of simulated comparisons (rows of `simulate_mining`) where the seed-level test rejects."""
    fa = stats.f1_stat(a.sum(axis=2))  # (sims, seeds)
    fb = stats.f1_stat(b.sum(axis=2))
    p = stats.seed_paired_p(fa - fb)
    return float(np.mean(p < alpha))


# ---------------------------------------------------------------- lem plan power


def _mining_items(paths: list[str]) -> Any:
    from lem import report
    from lem.evidence import compare as evidence

    items = evidence.Items()
    variants = set()
    for path in paths:
        key, data = report._read("mining", path, None)
        items.add_mining(key, data, path)
        variants.add(key["variant"])
    return items, variants


def power_table(paths: list[str], delta: float, alpha: float = 0.05, target: float = 0.8) -> list[dict]:
    """One row per comparison the report makes on mining (lem* vs mlm_tlm, mlm_tlm vs base): the run's
    difference, the variance parts, the power of its own seeds at `delta`, and the seeds needed for
    `target` power with its documents and with twice as many."""
    from lem.evidence import compare as evidence

    items, variants = _mining_items(paths)
    out = []
    for task, dataset, pair in sorted({k[:3] for k in items.units}):
        for a, b in evidence.comparisons_of(sorted(variants)):
            ra, rb = items.rows(task, dataset, pair, a), items.rows(task, dataset, pair, b)
            if ra is None or rb is None:
                continue
            sa = items.seeds[(task, dataset, pair, a)]
            sb = items.seeds[(task, dataset, pair, b)]
            common = [s for s in sa if s in sb]
            if len(common) < 2:
                continue
            parts = variance_parts(ra[[sa.index(s) for s in common]], rb[[sb.index(s) for s in common]])
            sd = sd_at(parts)
            out.append(
                {
                    "dataset": dataset,
                    "pair": pair,
                    "a": a,
                    "b": b,
                    "diff": parts["diff"],
                    "sd_seed": math.sqrt(parts["var_seed"]),
                    "sd_item": math.sqrt(parts["var_item"]),
                    "seeds": parts["seeds"],
                    "docs": parts["units"],
                    "power": power_of(delta, sd, parts["seeds"], alpha),
                    "seeds_needed": seeds_needed(delta, sd, alpha, target),
                    "seeds_needed_2x_docs": seeds_needed(
                        delta, sd_at(parts, 2 * parts["units"]), alpha, target
                    ),
                }
            )
    return out


def cmd_power(a: argparse.Namespace) -> None:
    paths = list(a.mining) or sorted(glob.glob(f"{a.results}/mining/*/seed*/*/*.metrics.json"))
    if not paths:
        raise PowerError(
            f"no mining metrics files under {a.results}/mining (run the pipeline first, or pass --mining)"
        )
    rows = power_table(paths, a.difference, a.alpha, a.power)
    if not rows:
        raise PowerError("no comparison with at least two paired seeds in the mining metrics files given")

    def need(n: int | None) -> str:
        return "> 200" if n is None else str(n)

    print(
        f"Power of the seed-level paired t-test (alpha {a.alpha:g}, two-sided) to detect a mining "
        f"intersection F1 difference of {a.difference:g}; seeds for {a.power:.0%} power."
    )
    print(
        "dataset pair | a vs b | observed diff | sd seed | sd item | seeds x docs | power | seeds needed | with 2x docs"
    )
    for r in rows:
        print(
            f"{r['dataset']} {r['pair']} | {r['a']} vs {r['b']} | {r['diff']:+.3f} | {r['sd_seed']:.3f} | "
            f"{r['sd_item']:.3f} | {r['seeds']} x {r['docs']} | {r['power']:.2f} | {need(r['seeds_needed'])} | "
            f"{need(r['seeds_needed_2x_docs'])}"
        )
