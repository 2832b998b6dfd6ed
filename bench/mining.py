"""Benchmark of exact mining in both candidate modes: our one-pass miner vs LASER's two FAISS k-NN searches
vs numpy miners.

Two modes of our miner: `candidates: knn` (margins over each side's k nearest neighbours, LASER's) and
`candidates: all` (the default, the news benchmark authors' formula: the best margin over every target /
source, with ratio margin and pooled neighbourhood; a second pass over the rows and columns that the
neighbour lists do not settle). References: a blocked numpy implementation of the same all-candidates
formula (fresh arrays per block; skipped above `--numpy-all-max-n`; its pairs are checked against ours),
and a dense numpy miner (the whole N x N matrix).

Synthetic L2-normalised embeddings with hub structure (a fifth of the points pulled towards a few shared
centres, so some targets are neighbours of many sources), d = 768, N per side (default 50k; `--n`).
Each contender runs in its own subprocess so that its peak RSS (ru_maxrss) is its own; the figure
includes the interpreter, numpy/faiss and both embedding matrices (2 * N * d * 4 bytes), i.e. what a
mining job really needs. The matmul ceiling is numpy's matmul of the same blocks into a reused buffer.
GFLOP/s counts 2 * N * N * d per product of the size of x @ y.T actually computed (the all mode: its first
pass plus the share of rows and columns it rescans).
Contenders run interleaved (`--repeat` rounds, every contender once per round), medians reported: the
machine may be shared, so single timings are noisy.

    .venv/bin/python bench/mining.py --n 10000

Last line: `mining_vs_two_knn_ratio=<float> peak_mb=<int> matmul_fraction=<float> all_vs_knn_ratio=<float>
all_peak_mb=<int>` (all_vs_knn_ratio: seconds of the all-candidates mode over the k-NN mode, same data).

`--device cuda` (N = 500k per side unless `--n`): the exact k-NN both ways on the GPU (`lem.mine.knn_torch`,
what `mining.settings.device: cuda` runs: curation's whole neighbour search of a 500k-pair corpus), after a
check at `--check-n` (20k) that its neighbours equal the numpy engine's; refuses at once, exit 2, without CUDA.

    python bench/mining.py --device cuda [--json gpu-mining.json]

Last line: `gpu_knn_seconds=<float> n=<int> gflops=<float> same_as_cpu=<yes|no>`.
"""

from __future__ import annotations

import argparse
import hashlib
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


def digest(*arrays: np.ndarray) -> str:
    return hashlib.sha256(b"".join(np.ascontiguousarray(a).tobytes() for a in arrays)).hexdigest()[:16]


def numpy_all(x: np.ndarray, y: np.ndarray, block: int) -> tuple[np.ndarray, np.ndarray]:
    """The authors' formula in plain blocked numpy (fresh arrays per block): best target of every source and
    best source of every target by ratio margin, pooled k-NN denominators, all candidates, ties to the
    lowest index."""
    nx, ny = len(x), len(y)
    yt = y.T
    rx = np.empty((nx, K), np.float32)
    cy = np.full((K, ny), -np.inf, np.float32)
    for a in range(0, nx, block):
        s = x[a : a + block] @ yt
        rx[a : a + block] = np.partition(s, ny - K, axis=1)[:, ny - K :]
        both = np.concatenate([cy, s])
        cy = np.partition(both, len(both) - K, axis=0)[len(both) - K :]
    # sums of the k best, best first, in float64 (as lem.mine.neighbourhood_terms)
    dx = -np.sort(-rx, axis=1).astype(np.float64).sum(axis=1) / (2 * K)
    dy = -np.sort(-cy.T, axis=1).astype(np.float64).sum(axis=1) / (2 * K)
    fb = np.zeros(nx, np.int64)
    bb, bs = np.zeros(ny, np.int64), np.full(ny, -np.inf)
    for a in range(0, nx, block):
        m = (x[a : a + block] @ yt).astype(np.float64) / (dx[a : a + block, None] + dy[None, :])
        fb[a : a + block] = m.argmax(axis=1)
        col = m.max(axis=0)
        better = col > bs
        bb[better] = m.argmax(axis=0)[better] + a
        bs[better] = col[better]
    return fb, bb


def worker(kind: str, xp: str, yp: str, block: int) -> dict:
    x, y = np.load(xp), np.load(yp)
    base = peak_mb()
    t = time.perf_counter()
    out: dict = {}
    if kind == "miner":
        from lem import mine as mining

        fwd, bwd = mining.knn_both(x, y, K, K, block)
        t_pass = time.perf_counter() - t
        st = mining.MineSettings(margin="ratio", neighbourhood="mean", candidates="knn", retrieval=("max",))
        best = mining.best_from_neighbours(fwd, bwd, st)
        out = {"pass_s": t_pass, "n_max": len(mining.retrieve(best, "max"))}
    elif kind == "miner_all":  # the default settings: the authors' formula, every candidate
        from lem import mine as mining
        from lem.mine import exact, margin

        st = mining.MineSettings()
        assert st.candidates == "all" and st.margin == "ratio" and st.neighbourhood == "pooled"
        fwd, bwd = mining.knn_both(x, y, K, K, block)
        t_pass = time.perf_counter() - t
        dx, dy = mining.neighbourhood_terms(fwd, bwd, K, st.neighbourhood)
        best = mining.best_over_all(x, y, dx, dy, st.margin, block, fwd, bwd)  # as mining.mine
        seconds = time.perf_counter() - t
        near_r = margin._best_of_candidates(fwd, fwd.idx.shape[1], dx, dy, st.margin)[0]
        near_c = margin._best_of_candidates(bwd, bwd.idx.shape[1], dy, dx, st.margin)[0]
        rows = exact._settled(fwd, near_r, dx, dy, st.margin, len(y), exact._product_slack(x, y))
        cols = exact._settled(bwd, near_c, dy, dx, st.margin, len(x), exact._product_slack(y, x))
        out = {"pass_s": t_pass, "pairs": digest(best.fwd_best, best.bwd_best), "seconds": seconds}
        out.update(settled_rows=float(rows.mean()), settled_cols=float(cols.mean()))
    elif kind == "numpy_all":
        fb, bb = numpy_all(x, y, block)
        out = {"pairs": digest(fb, bb)}
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
    out.setdefault("seconds", time.perf_counter() - t)
    out.update(peak_mb=peak_mb(), base_mb=base)
    return out


def run(kind: str, xp: Path, yp: Path, block: int) -> dict:
    cmd = [sys.executable, __file__, "--worker", kind, "--x", str(xp), "--y", str(yp), "--block", str(block)]
    res = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def gpu_main(a: argparse.Namespace) -> int:
    """`--device cuda`: the GPU engine's time at N per side, and its neighbours against the numpy engine's."""
    try:
        import torch
    except ImportError:
        print("bench/mining.py --device cuda: torch is not installed", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("bench/mining.py --device cuda: torch sees no CUDA device", file=sys.stderr)
        return 2
    from lem import mine as mining

    n = a.n or 500_000
    cuda = torch.device("cuda")
    x, y = synthetic(a.check_n, a.d, seed=1)
    want = mining.knn_both(x, y, K, K, a.block)
    got = mining.knn_torch(x, y, K, K, a.block, cuda)  # also the warm-up (CUDA context, kernels)
    same = all((g.idx == w.idx).all() for g, w in zip(got, want, strict=True))
    x, y = synthetic(n, a.d, seed=0)
    torch.cuda.synchronize()
    t = time.perf_counter()
    mining.knn_torch(x, y, K, K, a.block, cuda)  # copies in and out included
    seconds = time.perf_counter() - t
    gflops = 2.0 * n * n * a.d / seconds / 1e9
    name = torch.cuda.get_device_name(0)
    print(f"exact k-NN both ways on {name}: N={n:,} per side, d={a.d}, k={K}, block={a.block}: {seconds:.1f} s "
          f"({gflops:,.0f} GFLOP/s); neighbours at N={a.check_n:,} equal to the numpy engine's: {'yes' if same else 'NO'}")  # fmt: skip
    figures = {"device": name, "n": n, "d": a.d, "k": K, "block": a.block, "seconds": seconds,
               "gflops": gflops, "check_n": a.check_n, "same_as_cpu": same}  # fmt: skip
    if a.json:
        Path(a.json).write_text(json.dumps(figures, indent=1) + "\n")
    print(f"gpu_knn_seconds={seconds:.2f} n={n} gflops={gflops:.0f} same_as_cpu={'yes' if same else 'no'}")
    return 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--n", type=int, default=None, help="items per side (default 50k; 500k with --device cuda)"
    )
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="cuda: the GPU engine alone")
    ap.add_argument("--check-n", type=int, default=20_000, help="--device cuda: N of the check against numpy")
    ap.add_argument("--json", help="--device cuda: write the figures to this JSON file")
    ap.add_argument("--d", type=int, default=768)
    ap.add_argument("--block", type=int, default=1024)
    ap.add_argument("--dense-max-n", type=int, default=20_000, help="skip the dense miner above this N")
    ap.add_argument(
        "--numpy-all-max-n",
        type=int,
        default=20_000,
        help="skip the blocked numpy all-candidates miner above this N",
    )
    ap.add_argument("--repeat", type=int, default=3, help="runs per contender, interleaved; medians reported")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--x", help=argparse.SUPPRESS)
    ap.add_argument("--y", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        print(json.dumps(worker(a.worker, a.x, a.y, a.block)))
        return
    if a.device == "cuda":
        sys.exit(gpu_main(a))
    a.n = a.n or 50_000
    flops = 2.0 * a.n * a.n * a.d
    with tempfile.TemporaryDirectory() as tmp:
        x, y = synthetic(a.n, a.d, seed=0)
        xp, yp = Path(tmp) / "x.npy", Path(tmp) / "y.npy"
        np.save(xp, x)
        np.save(yp, y)
        del x, y
        kinds = ["matmul", "miner", "miner_all", "faiss2"]
        kinds += (["numpy_all"] if a.n <= a.numpy_all_max_n else []) + (
            ["dense"] if a.n <= a.dense_max_n else []
        )
        runs: dict[str, list[dict]] = {kind: [] for kind in kinds}
        for _ in range(a.repeat):  # interleaved, so a slow spell of a shared machine hits every contender
            for kind in kinds:
                runs[kind].append(run(kind, xp, yp, a.block))
        pairs = {kind: {r.pop("pairs") for r in rs} for kind, rs in runs.items() if "pairs" in rs[0]}
        res = {kind: {key: median([r[key] for r in rs]) for key in rs[0]} for kind, rs in runs.items()}
        for r in res.values():
            r["peak_mb"], r["base_mb"] = int(r["peak_mb"]), int(r.get("base_mb", 0))
    emb_mb = 2 * a.n * a.d * 4 / 2**20
    print(f"N={a.n} per side, d={a.d}, k={K}, block={a.block}; both embeddings = {emb_mb:.0f} MB of each RSS; "
          f"median of {a.repeat} interleaved runs")  # fmt: skip
    print(f"{'contender':<42}{'wall s':>9}{'peak MB':>9}{'GFLOP/s':>9}")
    # products computed by the all mode: the first pass, then the rows and columns it did not settle
    all_mm = 3 - res["miner_all"]["settled_rows"] - res["miner_all"]["settled_cols"]
    rows = [  # name, seconds, peak MB, products of the size of the whole x @ y.T
        ("numpy matmul, same blocks (ceiling)", res["matmul"]["seconds"], res["matmul"]["peak_mb"], 1),
        ("our miner: one pass (k-NN both)", res["miner"]["pass_s"], res["miner"]["peak_mb"], 1),
        ("our miner, k-NN mode: pass + margin + max", res["miner"]["seconds"], res["miner"]["peak_mb"], 1),
        ("our miner, all mode (default)", res["miner_all"]["seconds"], res["miner_all"]["peak_mb"], all_mm),
        ("two FAISS exact k-NN (LASER)", res["faiss2"]["seconds"], res["faiss2"]["peak_mb"], 2),
    ]
    if "numpy_all" in res:
        rows.append(("blocked numpy, all mode", res["numpy_all"]["seconds"], res["numpy_all"]["peak_mb"], 2))
    if "dense" in res:
        rows.append(("dense numpy, full N x N matrix", res["dense"]["seconds"], res["dense"]["peak_mb"], 1))
    for name, sec, pk, n_mm in rows:
        print(f"{name:<42}{sec:>9.2f}{pk:>9d}{n_mm * flops / sec / 1e9:>9.1f}")
    if "numpy_all" not in res:
        print(f"blocked numpy all mode skipped above N={a.numpy_all_max_n} (--numpy-all-max-n)")
    if "dense" not in res:
        print(f"dense numpy skipped: the N x N float32 matrix alone is {a.n * a.n * 4 / 2**30:.1f} GiB")
    if len(pairs["miner_all"]) != 1:
        print(f"WARNING: the all mode gave different pairs across runs: {sorted(pairs['miner_all'])}")
    if "numpy_all" in pairs:
        same = pairs["numpy_all"] == pairs["miner_all"]
        print(f"all mode: same best pairs as blocked numpy: {'yes' if same else 'NO'}")
    all_pass = res["miner_all"]["pass_s"]
    print(
        f"all mode: k-NN pass {all_pass:.2f} s + all-candidates pass {res['miner_all']['seconds'] - all_pass:.2f} s; "
        f"settled from their neighbours: {res['miner_all']['settled_rows']:.1%} of sources, "
        f"{res['miner_all']['settled_cols']:.1%} of targets (the others rescanned)"
    )
    ratio = res["miner"]["seconds"] / res["faiss2"]["seconds"]
    fraction = res["matmul"]["seconds"] / res["miner"]["pass_s"]
    all_vs_knn = res["miner_all"]["seconds"] / res["miner"]["seconds"]
    print(f"miner process RSS before mining {res['miner']['base_mb']} MB (interpreter + embeddings)")
    print(
        f"mining_vs_two_knn_ratio={ratio:.3f} peak_mb={res['miner']['peak_mb']} matmul_fraction={fraction:.3f} "
        f"all_vs_knn_ratio={all_vs_knn:.3f} all_peak_mb={res['miner_all']['peak_mb']}"
    )


if __name__ == "__main__":
    main()
