"""Calibration and power of the report's two-level test (lem.evidence.crossed), by simulation with the real
design's variance parts (lem.evidence.simulate).

Every setting simulates two recipes of equal skill (the false-positive rate: the share of comparisons the
test rejects at alpha 0.05) on one of the four tasks' statistics (mining F1 over documents, sentiment
macro-F1 over examples with 3 fine-tuning seeds nested in each pre-training seed, curation precision over
pairs, NMT BLEU over sentences), with 3, 5 or 10 pre-training seeds, in six scenarios:

  seeds          the seed part dominates; seed s of both recipes continues base model s (embedded default)
  shared-items   a small seed part and a recipe-by-item part shared by every seed (the design that makes a
                 test over seeds alone more liberal as seeds are added)
  hub            every seed continues one hub model (paper scale: nothing shared by seed s), with the
                 shared item part
  hub-items      the hub design with a small seed part and the shared item part
  collapsed      15 % of runs collapse (skill far below), with the shared item part: skewed seed scores
  items-only     no seed part at all: item noise only

Each comparison is tested by `lem.evidence.crossed.two_level_p`, the vectorised form of the
`two_level_test` the report runs (the same pseudo-values, mean squares and t; tests/unit/test_crossed.py checks
they agree); the seed-only paired t-test the report used before is printed beside it. Then the primary
family: three pairs (one comparison each, all null) corrected by Holm (`lem.evidence.stats.holm`), its
family-wise error rate; and the power at the primary family's level (Holm's first threshold, alpha / 3) for
mining at a true difference of about 0.05 F1.

    python bench/stats_calibration.py [--sims 4000] [--tasks mining,sentiment,curation,nmt]

Last line: `max_false_positive_rate=X primary_power=Y` (X the largest false-positive rate of the two-level
test over every setting and the family-wise rates; Y the power at 5 seeds).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np

from lem.evidence import crossed, stats
from lem.evidence import simulate as sim
from lem.nmt.bleu import bleu_from_sums

ALPHA = 0.05
SCENARIOS = {
    "seeds": sim.Design(seed_sd=0.15, base_sd=0.15),
    "shared-items": sim.Design(seed_sd=0.02, base_sd=0.15, rbi_sd=0.3),
    "hub": sim.Design(seed_sd=0.15, hub=True, rbi_sd=0.3),
    "hub-items": sim.Design(seed_sd=0.02, hub=True, rbi_sd=0.3),
    "collapsed": sim.Design(seed_sd=0.1, base_sd=0.15, collapse=0.15, rbi_sd=0.3),
    "items-only": sim.Design(seed_sd=0.0, base_sd=0.15, rbi_sd=0.0),
}
UNITS = {"mining": 105, "sentiment": 150, "curation": 200, "nmt": 150}
CHUNK = 500


def statistic_of(task: str):
    """A task's statistic of its simulated rows: `sim.STATISTICS`, and NMT's corpus BLEU from its sums."""
    return bleu_from_sums if task == "nmt" else sim.STATISTICS[task]


def rates(task: str, design: sim.Design, sims: int, rng: np.random.Generator, delta: float = 0.0):
    """(two-level rejection rate, seed-only rejection rate, mean difference of the scores) over `sims`."""
    statistic = statistic_of(task)
    two, old, diff = [], [], []
    for start in range(0, sims, CHUNK):
        a, b = sim.simulate(task, design, min(CHUNK, sims - start), rng, delta)
        two.append(crossed.two_level_p(a, b, statistic)["p"])
        sa, sb = statistic(a.sum(axis=-2)).mean(axis=-1), statistic(b.sum(axis=-2)).mean(axis=-1)
        old.append(stats.seed_paired_p(sa - sb))
        diff.append((sa - sb).mean(axis=-1))
    p, q = np.concatenate(two), np.concatenate(old)
    return float(np.mean(p < ALPHA)), float(np.mean(q < ALPHA)), float(np.mean(np.concatenate(diff)))


def family_rate(design: sim.Design, sims: int, rng: np.random.Generator, m: int = 3) -> float:
    """Family-wise error rate of Holm over `m` null mining comparisons (independent pairs)."""
    ps = np.stack(
        [
            np.concatenate(
                [
                    crossed.two_level_p(
                        *sim.simulate("mining", design, min(CHUNK, sims - s), rng), stats.f1_stat
                    )["p"]
                    for s in range(0, sims, CHUNK)
                ]
            )
            for _ in range(m)
        ],
        axis=1,
    )
    rejected = [min(stats.holm(row.tolist())) < ALPHA for row in ps]
    return float(np.mean(rejected))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=4000, help="simulated comparisons per setting")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tasks", default="mining,sentiment,curation,nmt")
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    start = time.perf_counter()
    tasks = [t for t in a.tasks.split(",") if t]
    print(f"{a.sims} simulated comparisons of equal recipes per setting; alpha {ALPHA}")
    print("task | scenario | seeds | false-positive rate (two-level) | (seed-only t-test, before)")
    worst = 0.0
    for task in tasks:
        for name, design in SCENARIOS.items():
            for seeds in (3, 5, 10):
                d = replace(design, seeds=seeds, units=UNITS[task], runs=3 if task == "sentiment" else 1)
                fpr, old, _ = rates(task, d, a.sims, rng)
                worst = max(worst, fpr)
                print(f"{task} | {name} | {seeds} | {fpr:.4f} | {old:.4f}", flush=True)
    print("primary family (3 null pairs, Holm): family-wise error rate")
    for name in ("shared-items", "hub", "collapsed"):
        for seeds in (3, 5, 10):
            fwer = family_rate(replace(SCENARIOS[name], seeds=seeds), a.sims, rng)
            worst = max(worst, fwer)
            print(f"mining | {name} | {seeds} | {fwer:.4f} | -", flush=True)
    print(
        f"power at the primary family's first Holm threshold (alpha {ALPHA / 3:.4f}), mining, 'seeds' scenario:"
    )
    power5 = float("nan")
    for seeds in (3, 5, 10):
        d = replace(SCENARIOS["seeds"], seeds=seeds)
        statistic = statistic_of("mining")
        hits, diffs = [], []
        for s in range(0, a.sims, CHUNK):
            x, y = sim.simulate("mining", d, min(CHUNK, a.sims - s), rng, delta=0.25)
            hits.append(crossed.two_level_p(x, y, statistic)["p"] < ALPHA / 3)
            diffs.append(statistic(x.sum(axis=-2)).mean(-1) - statistic(y.sum(axis=-2)).mean(-1))
        pw = float(np.mean(np.concatenate(hits)))
        if seeds == 5:
            power5 = pw
        print(
            f"{seeds} seeds: true difference {np.mean(np.concatenate(diffs)):+.3f} F1, power {pw:.3f}",
            flush=True,
        )
    print(f"({time.perf_counter() - start:.0f} s)")
    print(f"max_false_positive_rate={worst:.4f} primary_power={power5:.3f}")


if __name__ == "__main__":
    main()
