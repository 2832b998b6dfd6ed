"""Speed of the report's paired tests on one mining comparison: the paired bootstrap and the approximate
randomisation test of F1, 10,000 resamples each, over 1,000 documents (what a report job runs per comparison).
A figure to print, not a test (a timed test flakes on a busy machine): CPU seconds of this process, and wall.

    .venv/bin/python bench/stats_speed.py [--docs 1000] [--n 10000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from lem.evidence import stats


def mining_rows(rng: np.random.Generator, docs: int, recall: float) -> np.ndarray:
    """Per-document (n_correct, n_pred, n_gold) of a system finding each gold link with probability `recall`."""
    gold = rng.integers(1, 10, docs)
    pred = gold + rng.integers(0, 3, docs)
    return np.stack([rng.binomial(gold, recall), pred, gold], axis=1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--n", type=int, default=10_000, help="resamples of each test")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    a, b = mining_rows(rng, args.docs, 0.8), mining_rows(rng, args.docs, 0.75)
    for name, test in (
        ("paired_bootstrap", stats.paired_bootstrap),
        ("randomisation", stats.approximate_randomisation),
    ):
        cpu, wall = time.process_time(), time.perf_counter()
        test(a, b, stats.f1_stat, n=args.n, seed=0)
        print(f"{name}: {time.process_time() - cpu:.3f} CPU-s, {time.perf_counter() - wall:.3f} s wall")


if __name__ == "__main__":
    main()
