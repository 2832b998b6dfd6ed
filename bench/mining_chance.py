"""Benchmark of mining's chance level (`lem.mine.chance.mining_chance_analytic`): the simulation that mines random
embeddings `n_sim` times per group shape, with its neighbour search by partition (`top_k_stable`, what the
pipeline runs) against the whole-row stable sort it replaced (`np.argsort(-s, kind="stable")[:, :k]`), on the
group shapes of a retrieval set (one document of N x N sentences: the real-data multiNER test sets, N = 384) and
of a news set (many small documents). Both must give the same chance figures (checked: `same=yes|no`).

Passes run interleaved (`--repeat` rounds, each way once per round, in this process), medians reported: the
machine may be shared, so single timings are noisy. CPU seconds (process time), not wall.

    .venv/bin/python bench/mining_chance.py [--n 384] [--repeat 5]

Last line: `chance_partition_s=<float> chance_argsort_s=<float> speedup=<float> same=<yes|no>` (the retrieval
set's shape; the news shapes are printed above it).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from lem.mine import MineSettings
from lem.mine import chance as mine_chance


def argsort_top_k(s: np.ndarray, k: int) -> np.ndarray:
    """The neighbour search before f54edef: a stable sort of every whole row."""
    return np.argsort(-s, axis=1, kind="stable")[:, : min(k, s.shape[1])].astype(np.int64)


def timed(groups: list[tuple[int, int, int]], search) -> tuple[float, dict]:
    """CPU seconds of one chance computation with neighbour search `search`, and its result."""
    saved = mine_chance.top_k_stable
    mine_chance.top_k_stable = search
    try:
        start = time.process_time()
        result = mine_chance.mining_chance_analytic(groups, settings=MineSettings())
        return time.process_time() - start, result
    finally:
        mine_chance.top_k_stable = saved


def compare(name: str, groups: list[tuple[int, int, int]], repeat: int) -> tuple[float, float, bool]:
    new, old, same = [], [], True
    for _ in range(repeat):  # interleaved: each way once per round
        t_new, r_new = timed(groups, mine_chance.top_k_stable)
        t_old, r_old = timed(groups, argsort_top_k)
        new.append(t_new)
        old.append(t_old)
        same &= r_new == r_old
    a, b = statistics.median(new), statistics.median(old)
    print(f"{name}: partition {a:.3f} s, argsort {b:.3f} s (medians of {repeat}), same: {same}")
    return a, b, same


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=384, help="sentences per side of the retrieval set")
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    news = [
        (int(n), int(m), 3) for n, m in rng.integers(4, 13, size=(40, 2))
    ]  # 40 documents of 4-12 sentences
    compare("news (40 documents of 4-12 x 4-12)", news, a.repeat)
    p, s, same = compare(f"retrieval ({a.n} x {a.n})", [(a.n, a.n, a.n)], a.repeat)
    print(
        f"chance_partition_s={p:.3f} chance_argsort_s={s:.3f} speedup={s / p:.2f} same={'yes' if same else 'no'}"
    )


if __name__ == "__main__":
    main()
