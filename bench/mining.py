"""Benchmark of exact mining: our one-pass miner vs LASER's two FAISS k-NN searches vs a dense numpy miner.

Synthetic L2-normalised embeddings with hub structure (a fifth of the points pulled towards a few shared
centres, so some targets are neighbours of many sources), d = 768, N per side (default 50k; `--n`).
Each contender runs in its own subprocess so that its peak RSS (ru_maxrss) is its own; the figure
includes the interpreter, numpy/faiss and both embedding matrices (2 * N * d * 4 bytes), i.e. what a
mining job really needs. The matmul ceiling is numpy's matmul of the same blocks into a reused buffer.

    .venv/bin/python bench/mining.py --n 10000

Last line: `mining_vs_two_knn_ratio=<float> peak_mb=<int> matmul_fraction=<float>`.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

import numpy as np

K = 4


def synthetic(n: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Source and target embeddings: noisy translations of each other, with hubs."""
    rng = np.random.default_rng(seed)
    hubs = rng.standard_normal((32, d)).astype(np.float32) * 1.5
    z = rng.standard_normal((n, d), dtype=np.float32)
    pulled = rng.random(n) < 0.2
    z[pulled] += hubs[rng.integers(0, len(hubs), pulled.sum())]
    y = z + 0.8 * rng.standard_normal((n, d), dtype=np.float32)
    y = y[rng.permutation(n)]
    for a in (z, y):
        a /= np.linalg.norm(a, axis=1, keepdims=True)
    return z, y


def peak_mb() -> int:
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def worker(kind: str, xp: str, yp: str, block: int) -> dict:
    x, y = np.load(xp), np.load(yp)
    base = peak_mb()
    t = time.perf_counter()
    out: dict = {}
    if kind == "miner":
        from lem import mining

        fwd, bwd = mining.knn_both(x, y, K, K, block)
        t_pass = time.perf_counter() - t
        st = mining.MineSettings(margin="ratio", neighbourhood="mean", candidates="knn", retrieval=("max",))
        best = mining.best_from_neighbours(fwd, bwd, st)
        out = {"pass_s": t_pass, "n_max": len(mining.retrieve(best, "max"))}
    elif kind == "faiss2":
        import faiss

        for db, q in ((y, x), (x, y)):  # LASER: one exact search per direction
            index = faiss.IndexFlatIP(db.shape[1])
            index.add(db)
            index.search(q, K)
    elif kind == "dense":  # the authors' way: the whole matrix, then neighbours and margins from it
        s = x @ y.T
        rx = -np.partition(-s, K, axis=1)[:, :K].mean(axis=1)
        ry = -np.partition(-s, K, axis=0)[:K].mean(axis=0)
        s /= (rx[:, None] + ry[None, :]) / 2
        out = {"fwd": int(s.argmax(axis=1)[0]), "bwd": int(s.argmax(axis=0)[0])}
    elif kind == "matmul":
        buf = np.empty((block, len(y)), np.float32)
        yt = y.T
        for a in range(0, len(x), block):
            xb = x[a : a + block]
            np.matmul(xb, yt, out=buf[: len(xb)])
    out.update(seconds=time.perf_counter() - t, peak_mb=peak_mb(), base_mb=base)
    return out


def run(kind: str, xp: Path, yp: Path, block: int) -> dict:
    cmd = [sys.executable, __file__, "--worker", kind, "--x", str(xp), "--y", str(yp), "--block", str(block)]
    res = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--d", type=int, default=768)
    ap.add_argument("--block", type=int, default=1024)
    ap.add_argument("--dense-max-n", type=int, default=20_000, help="skip the dense miner above this N")
    ap.add_argument("--repeat", type=int, default=3, help="runs per contender, interleaved; medians reported")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--x", help=argparse.SUPPRESS)
    ap.add_argument("--y", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        print(json.dumps(worker(a.worker, a.x, a.y, a.block)))
        return
    flops = 2.0 * a.n * a.n * a.d
    with tempfile.TemporaryDirectory() as tmp:
        x, y = synthetic(a.n, a.d, seed=0)
        xp, yp = Path(tmp) / "x.npy", Path(tmp) / "y.npy"
        np.save(xp, x)
        np.save(yp, y)
        del x, y
        kinds = ["matmul", "miner", "faiss2"] + (["dense"] if a.n <= a.dense_max_n else [])
        runs: dict[str, list[dict]] = {kind: [] for kind in kinds}
        for _ in range(a.repeat):  # interleaved, so a slow spell of a shared machine hits every contender
            for kind in kinds:
                runs[kind].append(run(kind, xp, yp, a.block))
        res = {kind: {key: median([r[key] for r in rs]) for key in rs[0]} for kind, rs in runs.items()}
        for r in res.values():
            r["peak_mb"], r["base_mb"] = int(r["peak_mb"]), int(r.get("base_mb", 0))
    emb_mb = 2 * a.n * a.d * 4 / 2**20
    print(f"N={a.n} per side, d={a.d}, k={K}, block={a.block}; both embeddings = {emb_mb:.0f} MB of each RSS; "
          f"median of {a.repeat} interleaved runs")  # fmt: skip
    print(f"{'contender':<34}{'wall s':>9}{'peak MB':>9}{'GFLOP/s':>9}")
    rows = [
        ("numpy matmul, same blocks (ceiling)", res["matmul"]["seconds"]),
        ("our miner: one pass (k-NN both)", res["miner"]["pass_s"]),
        ("our miner: pass + margin + max", res["miner"]["seconds"]),
        ("two FAISS exact k-NN (LASER)", res["faiss2"]["seconds"]),
    ]
    peaks = [
        res["matmul"]["peak_mb"],
        res["miner"]["peak_mb"],
        res["miner"]["peak_mb"],
        res["faiss2"]["peak_mb"],
    ]
    if "dense" in res:
        rows.append(("dense numpy, full N x N matrix", res["dense"]["seconds"]))
        peaks.append(res["dense"]["peak_mb"])
    for (name, s), pk in zip(rows, peaks, strict=True):
        n_mm = 2 if name.startswith("two") else 1
        print(f"{name:<34}{s:>9.2f}{pk:>9d}{n_mm * flops / s / 1e9:>9.1f}")
    if "dense" not in res:
        print(f"dense numpy skipped: the N x N float32 matrix alone is {a.n * a.n * 4 / 2**30:.1f} GiB")
    ratio = res["miner"]["seconds"] / res["faiss2"]["seconds"]
    fraction = res["matmul"]["seconds"] / res["miner"]["pass_s"]
    print(f"miner process RSS before mining {res['miner']['base_mb']} MB (interpreter + embeddings)")
    print(
        f"mining_vs_two_knn_ratio={ratio:.3f} peak_mb={res['miner']['peak_mb']} matmul_fraction={fraction:.3f}"
    )


if __name__ == "__main__":
    main()
