"""Nearest neighbours both ways: the exact one-pass block engine (`knn_both`, numpy on the CPU; `knn_torch`,
the same search by torch matmul on a GPU) and FAISS indexes (`knn_index`).

The similarity matrix is never held whole: `knn_both` walks blocks of `x @ y.T` once and keeps, from the
same blocks, the k nearest targets of every source (rows) and the k nearest sources of every target
(columns). LASER's `mine_bitexts.py` runs two separate k-NN searches instead (the matrix twice).
Ties are broken towards the lowest index. `knn_exact` picks the engine from `mining.settings.device`.
"""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from lem.mine.settings import MineSettings

# Imported inside functions: torch and faiss (planning imports this module, with the mining settings, and
# needs neither; each index needs one)

_BOUND_GROUP = 2048  # columns per group when bounding the k-th best of a row (see `_group_bound`)


@functools.cache
def _pool() -> ThreadPoolExecutor:
    """The worker threads that filter candidate blocks (created on first use, not at import)."""
    return ThreadPoolExecutor(max_workers=2)


@dataclass
@dataclass
class Neighbours:
    """The k nearest items of each query: similarities (float32, best first) and global indices (int64)."""

    sims: np.ndarray
    idx: np.ndarray

    @classmethod
    def empty(cls, n: int, k: int) -> Neighbours:
        return cls(np.full((n, k), -np.inf, np.float32), np.full((n, k), -1, np.int64))


def _desc_key(vals: np.ndarray) -> np.ndarray:
    """uint32 keys that sort float32 values in descending order (exact: the float bits, flipped)."""
    u = (np.asarray(vals, np.float32) + np.float32(0)).view(np.uint32)  # + 0 turns -0.0 into +0.0
    asc = np.where(u >> 31 == 1, ~u, u | np.uint32(1 << 31))
    return ~asc


def _topk_groups(group: np.ndarray, other: np.ndarray, vals: np.ndarray, k: int, other_sorted: bool = False):
    """Per group, the k best (value desc, other asc) of the given triplets: (group, other, vals, rank).

    `other_sorted`: the triplets already come in ascending (group, other) order, so one stable sort suffices.
    """
    key = (group.astype(np.int64) << 32) | _desc_key(vals).astype(np.int64)
    order = np.argsort(key, kind="stable") if other_sorted else np.lexsort((other, key))
    g = group[order]
    first = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    rank = np.arange(len(g)) - np.repeat(first, np.diff(np.r_[first, len(g)]))
    keep = order[rank < k]
    return group[keep], other[keep], vals[keep], rank[rank < k]


def _group_bound(s: np.ndarray, k: int, axis: int) -> np.ndarray:
    """A cheap lower bound of the k-th largest value along `axis`: the smallest of k group maxima."""
    n = s.shape[axis]
    g = min(n // k, _BOUND_GROUP)
    if axis == 1:
        return s[:, : k * g].reshape(s.shape[0], k, g).max(axis=2).min(axis=1)
    return s[: k * g].reshape(k, g, s.shape[1]).max(axis=1).min(axis=0)


def _candidates(s: np.ndarray, bound_r: np.ndarray, col_thr: np.ndarray, col_strict: bool):
    """Flat indices of the entries that may be in a row's or a column's top k, and which are column ones.

    Works on row chunks that stay in cache, on two threads (numpy releases the GIL in these loops).
    """
    ny = s.shape[1]
    step = max(1, (2 << 20) // max(ny, 1))  # ~8 MB of float32 per chunk

    def chunk(r0: int) -> tuple[np.ndarray, np.ndarray]:
        sc = s[r0 : r0 + step]
        col = sc > col_thr if col_strict else sc >= col_thr
        m = sc >= bound_r[r0 : r0 + step, None]
        m |= col
        f = np.flatnonzero(m)
        return f + r0 * ny, col.reshape(-1)[f]

    parts = list(_pool().map(chunk, range(0, len(s), step))) if len(s) > step else [chunk(0)]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def _empty_both(
    x: np.ndarray, y: np.ndarray, k_x: int, k_y: int | None
) -> tuple[int, int, int, int, Neighbours, Neighbours]:
    """Sizes, k capped by the other side's size (k_y defaults to k_x), and the empty neighbour lists that
    `knn_both` and `knn_torch` fill."""
    k_y = k_x if k_y is None else k_y
    nx, ny = len(x), len(y)
    kx, ky = min(k_x, ny), min(k_y, nx)
    return nx, ny, kx, ky, Neighbours.empty(nx, kx), Neighbours.empty(ny, ky)


def knn_both(
    x: np.ndarray,
    y: np.ndarray,
    k_x: int,
    k_y: int | None = None,
    block_size: int = 1024,
) -> tuple[Neighbours, Neighbours]:
    """Exact k nearest (inner product) y of every x and x of every y, from one pass over `x @ y.T`.

    Memory is O(block_size * len(y)). k is capped by the other side's size.
    """
    nx, ny, kx, ky, fwd, bwd = _empty_both(x, y, k_x, k_y)
    if nx == 0 or ny == 0:
        return fwd, bwd
    yt = np.ascontiguousarray(y, dtype=np.float32).T
    thr = np.full(ny, -np.inf, np.float32)  # k-th best similarity of each column so far
    rows = min(block_size, nx)
    # Two buffers: the matmul of block i+1 (compute-bound, BLAS threads) overlaps the candidate filtering
    # of block i (memory-bound, a worker thread); peak memory 2 * block_size * ny floats.
    bufs = [np.empty((rows, ny), np.float32) for _ in range(2 if nx > rows else 1)]

    def process(start: int, s: np.ndarray, seen: int) -> None:
        b = len(s)
        bound_r = _group_bound(s, kx, axis=1)
        if seen >= ky:
            col_thr, col_strict = thr, True  # a later row only displaces on a strictly better value
        elif b >= ky:
            col_thr, col_strict = _group_bound(s, ky, axis=0), False
        else:
            col_thr, col_strict = np.full(ny, -np.inf, np.float32), False
        flat, col_ok = _candidates(s, bound_r, col_thr, col_strict)
        r, c = np.divmod(flat, ny)
        v = s.reshape(-1)[flat]
        # rows: every candidate of a row is in this block, so its top-k is final
        sel = v >= bound_r[r]
        g, o, val, rank = _topk_groups(r[sel], c[sel], v[sel], kx, other_sorted=True)
        fwd.sims[start + g, rank] = val
        fwd.idx[start + g, rank] = o
        # columns: merge this block's candidates into the running lists
        cc, rr, vv = c[col_ok], r[col_ok] + start, v[col_ok]
        if len(cc):
            touched = np.unique(cc)
            old_v, old_i = bwd.sims[touched].reshape(-1), bwd.idx[touched].reshape(-1)
            old_c = np.repeat(touched, ky)
            live = old_i >= 0
            g, o, val, rank = _topk_groups(
                np.r_[old_c[live], cc], np.r_[old_i[live], rr], np.r_[old_v[live], vv], ky
            )
            bwd.sims[g, rank] = val
            bwd.idx[g, rank] = o
            thr[touched] = bwd.sims[touched, ky - 1]

    pending = None
    seen = 0
    with ThreadPoolExecutor(max_workers=1) as worker:
        for i, start in enumerate(range(0, nx, block_size)):
            xb = np.asarray(x[start : start + block_size], dtype=np.float32)
            s = bufs[i % len(bufs)][: len(xb)]
            np.matmul(xb, yt, out=s)  # the other buffer is still being filtered meanwhile
            if pending is not None:
                pending.result()
            pending = worker.submit(process, start, s, seen)
            seen += len(xb)
        if pending is not None:
            pending.result()
    return fwd, bwd


def _top_ties_low(vals, idx, k: int):
    """Of candidate (value, index) lists (torch, one list per row), the k best by value desc, index asc."""
    import torch

    order = torch.argsort(idx, dim=1, stable=True)
    vals, idx = vals.gather(1, order), idx.gather(1, order)
    order = torch.argsort(vals, dim=1, descending=True, stable=True)[:, :k]
    return vals.gather(1, order), idx.gather(1, order)


def _topk_rows(s, k: int):
    """Exact top k of every row of `s` (torch), ties to the lowest column: `torch.topk` may break a tie at
    the k-th value either way, so rows where it may have (more entries equal to the k-th value than it
    kept) are redone with a stable sort."""
    import torch

    vals, idx = torch.topk(s, k, dim=1, sorted=True)
    kth = vals[:, k - 1 : k]
    bad = torch.nonzero((s == kth).sum(dim=1) > (vals == kth).sum(dim=1)).flatten()
    if len(bad):
        sv, si = torch.sort(s[bad], dim=1, descending=True, stable=True)
        vals[bad], idx[bad] = sv[:, :k], si[:, :k]
    return _top_ties_low(vals, idx, k)


def torch_device(device: str):
    """The torch device of `mining.settings.device` (`cuda` or `auto`; `cpu` runs `knn_both` instead)."""
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("mining.settings.device is cuda but torch sees no CUDA device (use cpu or auto)")
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def knn_torch(
    x: np.ndarray, y: np.ndarray, k_x: int, k_y: int | None = None, block_size: int = 1024, device=None
) -> tuple[Neighbours, Neighbours]:
    """`knn_both` by torch on `device` (a GPU): float32 matmul of blocks of `x` against all of `y` (TF32
    off), each block's row top-k final, its column top-k merged into the running lists; the same neighbours
    as `knn_both` (ties to the lowest index), similarities up to float32 rounding of the dot products."""
    import torch

    nx, ny, kx, ky, fwd, bwd = _empty_both(x, y, k_x, k_y)
    if nx == 0 or ny == 0:
        return fwd, bwd
    device = torch.device("cpu") if device is None else torch.device(device)
    precision = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")  # no TF32: the products stay float32 ones
    try:
        with torch.no_grad():
            yt = torch.as_tensor(np.ascontiguousarray(y, dtype=np.float32), device=device).T
            col_v = torch.full((ny, 0), -torch.inf, device=device)
            col_i = torch.zeros((ny, 0), dtype=torch.int64, device=device)
            for start in range(0, nx, block_size):
                xb = torch.as_tensor(np.ascontiguousarray(x[start : start + block_size], dtype=np.float32))
                s = xb.to(device) @ yt
                v, i = _topk_rows(s, kx)
                fwd.sims[start : start + len(xb)], fwd.idx[start : start + len(xb)] = (
                    v.cpu().numpy(),
                    i.cpu().numpy(),
                )
                bv, bi = _topk_rows(s.T, min(ky, len(xb)))
                # earlier rows first: on a tie the running lists (lower indices) come before this block's
                col_v, col_i = _top_ties_low(torch.cat([col_v, bv], 1), torch.cat([col_i, bi + start], 1), ky)
            bwd.sims[:], bwd.idx[:] = col_v.cpu().numpy(), col_i.cpu().numpy()
    finally:
        torch.set_float32_matmul_precision(precision)
    return fwd, bwd


def knn_exact(
    x: np.ndarray,
    y: np.ndarray,
    k_x: int,
    k_y: int | None = None,
    block_size: int = 1024,
    device: str = "cpu",
) -> tuple[Neighbours, Neighbours]:
    """The exact search on `device` (`mining.settings.device`): `cpu` the numpy engine; `cuda` torch on the
    GPU; `auto` the GPU when torch sees one, else the numpy engine."""
    if device == "cpu":
        return knn_both(x, y, k_x, k_y, block_size)
    if device == "auto":
        try:
            import torch
        except ImportError:
            return knn_both(x, y, k_x, k_y, block_size)
        if not torch.cuda.is_available():
            return knn_both(x, y, k_x, k_y, block_size)
    return knn_torch(x, y, k_x, k_y, block_size, torch_device(device))


def knn_index(x: np.ndarray, y: np.ndarray, k: int, settings: MineSettings) -> tuple[Neighbours, Neighbours]:
    """Approximate k-NN both ways with a FAISS index (IVF, HNSW or OPQ+IVF+PQ), re-ranked by exact cosine."""
    import faiss

    def search(db: np.ndarray, q: np.ndarray, kk: int) -> Neighbours:
        n, d = db.shape
        nlist = settings.nlist or max(1, int(4 * np.sqrt(n)))
        spec = {
            "ivf": f"IVF{nlist},Flat",
            "hnsw": f"HNSW{settings.hnsw_m},Flat",
            "ivfpq": f"OPQ{settings.pq_m},IVF{nlist},PQ{settings.pq_m}",
        }[settings.index]
        index = faiss.index_factory(d, spec, faiss.METRIC_INNER_PRODUCT)
        params = faiss.ParameterSpace()
        # device cuda/auto with faiss-gpu (envs/mining-gpu.yaml) and a GPU: the IVF index on the GPU
        if settings.device != "cpu" and settings.index == "ivf" and getattr(faiss, "get_num_gpus", int)() > 0:
            index = faiss.index_cpu_to_gpu(faiss.StandardGpuResources(), 0, index)
            params = faiss.GpuParameterSpace()
        db32 = np.ascontiguousarray(db, dtype=np.float32)
        index.train(db32)
        index.add(db32)
        if settings.index == "hnsw":
            params.set_index_parameter(index, "efSearch", settings.ef_search)
        else:
            params.set_index_parameter(index, "nprobe", settings.nprobe)
        _, idx = index.search(np.ascontiguousarray(q, dtype=np.float32), kk)
        idx = idx.astype(np.int64)
        sims = np.full(idx.shape, -np.inf, np.float32)
        for a in range(0, len(q), 4096):  # exact re-ranking, in chunks
            ii = idx[a : a + 4096]
            got = np.einsum("nd,nkd->nk", q[a : a + 4096].astype(np.float32), db32[np.maximum(ii, 0)])
            sims[a : a + 4096] = np.where(ii >= 0, got, -np.inf)
        rows = np.repeat(np.arange(len(q)), kk)
        live = idx.reshape(-1) >= 0
        out = Neighbours.empty(len(q), kk)
        g, o, val, rank = _topk_groups(rows[live], idx.reshape(-1)[live], sims.reshape(-1)[live], kk)
        out.sims[g, rank], out.idx[g, rank] = val, o
        return out

    return search(y, x, min(k, len(y))), search(x, y, min(k, len(x)))
