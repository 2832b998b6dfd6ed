"""Margin-based bitext mining (LASER's method and the news benchmark authors' protocol) and its P/R/F1.

The similarity matrix is never held whole: `knn_both` walks blocks of `x @ y.T` once and keeps, from the
same blocks, the k nearest targets of every source (rows) and the k nearest sources of every target
(columns). LASER's `mine_bitexts.py` runs two separate k-NN searches instead (the matrix twice).

Margins (LASER, Artetxe & Schwenk 2019), with r(a) the k nearest similarities of a on the other side:
  ratio     cos(a, b) / denom(a, b)
  distance  cos(a, b) - denom(a, b)
  absolute  cos(a, b)
  denom `mean` (LASER):    (mean r(a) + mean r(b)) / 2
  denom `pooled` (authors): (sum r(a) + sum r(b)) / (|r(a)| + |r(b)|)
Both denominators agree when each side has at least k sentences; they differ in short documents.
Ties are broken towards the lowest index everywhere (neighbours, best candidate, greedy `max` order).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lem.files import atomic_path, write_json
from lem.settings import known_keys

log = logging.getLogger(__name__)

MARGINS = ("ratio", "distance", "absolute")
NEIGHBOURHOODS = ("mean", "pooled")
CANDIDATES = ("all", "knn")
RETRIEVALS = ("forward", "backward", "intersection", "max")
INDEXES = ("exact", "ivf", "hnsw", "ivfpq")
_POOL = ThreadPoolExecutor(max_workers=2)
_BOUND_GROUP = 2048  # columns per group when bounding the k-th best of a row (see `_group_bound`)


@dataclass(frozen=True)
class MineSettings:
    """Every mining choice; the defaults reproduce the news benchmark authors' protocol."""

    margin: str = "ratio"
    neighbourhood: str = "pooled"
    k: int = 4
    candidates: str = "all"
    candidate_k: int | None = None  # None: same as k
    retrieval: tuple[str, ...] = ("forward", "backward", "intersection")
    threshold: float | None = None  # keep pairs with score > threshold (strict, as LASER)
    per_document: bool | None = None  # None: true when the sentence files have document ids
    index: str = "exact"
    block_size: int = 1024
    nlist: int | None = None  # IVF lists; None: 4 * sqrt(n), at least 1
    nprobe: int = 16
    hnsw_m: int = 32
    ef_search: int = 128
    pq_m: int = 64  # OPQ/PQ sub-quantizers for index=ivfpq (must divide the dimension)

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> MineSettings:
        d = known_keys(cls, d, "mining settings")
        if "retrieval" in d:
            r = d["retrieval"]
            d["retrieval"] = (r,) if isinstance(r, str) else tuple(r)
        s = cls(**d)
        s.validate()
        return s

    def validate(self) -> None:
        for name, value, allowed in [
            ("margin", self.margin, MARGINS),
            ("neighbourhood", self.neighbourhood, NEIGHBOURHOODS),
            ("candidates", self.candidates, CANDIDATES),
            ("index", self.index, INDEXES),
        ]:
            if value not in allowed:
                raise ValueError(f"mining setting {name}={value!r}: expected one of {allowed}")
        bad = [r for r in self.retrieval if r not in RETRIEVALS]
        if bad or not self.retrieval:
            raise ValueError(
                f"mining setting retrieval={list(self.retrieval)}: expected a non-empty list of {RETRIEVALS}"
            )
        if self.k < 1 or (self.candidate_k is not None and self.candidate_k < 1) or self.block_size < 1:
            raise ValueError("mining settings k, candidate_k and block_size must be >= 1")
        if self.index != "exact" and self.candidates == "all":
            raise ValueError(
                f"mining setting index={self.index!r} needs candidates='knn' (an index only gives neighbours)"
            )

    @property
    def n_candidates(self) -> int:
        return self.k if self.candidate_k is None else self.candidate_k

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["retrieval"] = list(self.retrieval)
        return d


# ---------------------------------------------------------------- nearest neighbours, one pass


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

    parts = list(_POOL.map(chunk, range(0, len(s), step))) if len(s) > step else [chunk(0)]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def knn_both(
    x: np.ndarray,
    y: np.ndarray,
    k_x: int,
    k_y: int | None = None,
    block_size: int = 1024,
    x_offset: int = 0,
    y_offset: int = 0,
) -> tuple[Neighbours, Neighbours]:
    """Exact k nearest (inner product) y of every x and x of every y, from one pass over `x @ y.T`.

    Memory is O(block_size * len(y)). k is capped by the other side's size. Returned indices are global
    (`y_offset` / `x_offset` added) so that shard results can be merged with `merge_neighbours`.
    """
    k_y = k_x if k_y is None else k_y
    nx, ny = len(x), len(y)
    kx, ky = min(k_x, ny), min(k_y, nx)
    fwd, bwd = Neighbours.empty(nx, kx), Neighbours.empty(ny, ky)
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
        fwd.idx[start + g, rank] = o + y_offset
        # columns: merge this block's candidates into the running lists
        cc, rr, vv = c[col_ok], r[col_ok] + start + x_offset, v[col_ok]
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


def merge_neighbours(parts: Sequence[Neighbours], k: int) -> Neighbours:
    """Merge neighbour lists of the same queries found in disjoint database shards (global indices)."""
    n = len(parts[0].sims)
    sims = np.concatenate([p.sims for p in parts], axis=1)
    idx = np.concatenate([p.idx for p in parts], axis=1)
    k = min(k, int((idx >= 0).sum(axis=1).min()) if n else k)
    rows = np.repeat(np.arange(n), sims.shape[1])
    live = idx.reshape(-1) >= 0
    out = Neighbours.empty(n, k)
    g, o, val, rank = _topk_groups(rows[live], idx.reshape(-1)[live], sims.reshape(-1)[live], k)
    out.sims[g, rank], out.idx[g, rank] = val, o
    return out


def save_neighbours(path: str | Path, nb: Neighbours) -> None:
    """Write neighbours as an .npz (no pickle), atomically."""
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            np.savez(f, sims=nb.sims, idx=nb.idx)


def load_neighbours(path: str | Path) -> Neighbours:
    with np.load(path, allow_pickle=False) as z:
        return Neighbours(z["sims"], z["idx"])


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
        db32 = np.ascontiguousarray(db, dtype=np.float32)
        index.train(db32)
        index.add(db32)
        if settings.index == "hnsw":
            faiss.ParameterSpace().set_index_parameter(index, "efSearch", settings.ef_search)
        else:
            faiss.ParameterSpace().set_index_parameter(index, "nprobe", settings.nprobe)
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


# ---------------------------------------------------------------- margin scoring


def neighbourhood_terms(
    fwd: Neighbours, bwd: Neighbours, k: int, neighbourhood: str
) -> tuple[np.ndarray, np.ndarray]:
    """Per-source and per-target terms whose sum is the margin denominator (both formulas separate)."""
    kx, ky = min(k, fwd.sims.shape[1]), min(k, bwd.sims.shape[1])
    sx = fwd.sims[:, :kx].astype(np.float64).sum(axis=1)
    sy = bwd.sims[:, :ky].astype(np.float64).sum(axis=1)
    if neighbourhood == "mean":  # (mean_x + mean_y) / 2
        return sx / (2 * max(kx, 1)), sy / (2 * max(ky, 1))
    if neighbourhood == "pooled":  # (sum_x + sum_y) / (kx + ky)
        return sx / max(kx + ky, 1), sy / max(kx + ky, 1)
    raise ValueError(f"unknown neighbourhood {neighbourhood!r}; expected one of {NEIGHBOURHOODS}")


def margin(cos: np.ndarray, denom: np.ndarray, kind: str) -> np.ndarray:
    """The margin of cosine `cos` against the neighbourhood denominator `denom`."""
    if kind == "ratio":
        return cos / denom
    if kind == "distance":
        return cos - denom
    if kind == "absolute":
        return cos + 0 * denom
    raise ValueError(f"unknown margin {kind!r}; expected one of {MARGINS}")


def pair_margin_scores(
    x: np.ndarray,
    y: np.ndarray,
    k: int = 4,
    margin_kind: str = "ratio",
    neighbourhood: str = "mean",
    block_size: int = 1024,
) -> np.ndarray:
    """Margin score of each given pair (x[i], y[i]) against each side's k nearest neighbours on the other.

    LASER's scoring of an existing bitext (used to rank a noisy parallel corpus).
    """
    if len(x) != len(y):
        raise ValueError(f"pair_margin_scores needs aligned rows, got {len(x)} and {len(y)}")
    fwd, bwd = knn_both(x, y, k, k, block_size)
    dx, dy = neighbourhood_terms(fwd, bwd, k, neighbourhood)
    cos = np.einsum("nd,nd->n", np.asarray(x, np.float64), np.asarray(y, np.float64))
    return margin(cos, dx + dy, margin_kind)


@dataclass
class Best:
    """The best candidate of every source (forward) and every target (backward), with its score."""

    fwd_best: np.ndarray
    fwd_score: np.ndarray
    bwd_best: np.ndarray
    bwd_score: np.ndarray


def _best_of_candidates(nb: Neighbours, n: int, d_self: np.ndarray, d_other: np.ndarray, kind: str):
    cand = nb.idx[:, :n]
    scores = margin(nb.sims[:, :n].astype(np.float64), d_self[:, None] + d_other[cand], kind)
    top = scores.max(axis=1)
    best = np.where(scores == top[:, None], cand, np.iinfo(np.int64).max).min(axis=1)
    return best, top


def best_from_neighbours(fwd: Neighbours, bwd: Neighbours, settings: MineSettings) -> Best:
    """Best candidates when the candidates are each side's `candidate_k` nearest neighbours (LASER)."""
    dx, dy = neighbourhood_terms(fwd, bwd, settings.k, settings.neighbourhood)
    nc = settings.n_candidates
    fb, fs = _best_of_candidates(fwd, min(nc, fwd.idx.shape[1]), dx, dy, settings.margin)
    bb, bs = _best_of_candidates(bwd, min(nc, bwd.idx.shape[1]), dy, dx, settings.margin)
    return Best(fb, fs, bb, bs)


def best_over_all(
    x: np.ndarray, y: np.ndarray, dx: np.ndarray, dy: np.ndarray, kind: str, block_size: int
) -> Best:
    """Best candidates among all targets/sources (the authors' protocol): a second blocked pass."""
    nx, ny = len(x), len(y)
    fb, fs = np.zeros(nx, np.int64), np.full(nx, -np.inf)
    bb, bs = np.zeros(ny, np.int64), np.full(ny, -np.inf)
    yt = np.ascontiguousarray(y, dtype=np.float32).T
    block_size = max(1, min(block_size, 16_000_000 // max(ny, 1)))  # float64 scores: <= 128 MB a block
    for start in range(0, nx, block_size):
        xb = np.asarray(x[start : start + block_size], dtype=np.float32)
        s = margin((xb @ yt).astype(np.float64), dx[start : start + len(xb), None] + dy[None, :], kind)
        fb[start : start + len(xb)] = s.argmax(axis=1)  # first maximum: lowest index
        fs[start : start + len(xb)] = s.max(axis=1)
        col = s.max(axis=0)
        better = col > bs  # strict: an earlier (lower) source keeps a tie
        bb[better] = s.argmax(axis=0)[better] + start
        bs[better] = col[better]
    return Best(fb, fs, bb, bs)


def mine(x: np.ndarray, y: np.ndarray, settings: MineSettings) -> Best:
    """Best target of every source and best source of every target under the configured margin."""
    if len(x) == 0 or len(y) == 0:
        return _empty_best(len(x), len(y))
    kk = settings.k if settings.candidates == "all" else max(settings.k, settings.n_candidates)
    if settings.index == "exact":
        fwd, bwd = knn_both(x, y, kk, kk, settings.block_size)
    else:
        fwd, bwd = knn_index(x, y, kk, settings)
    if settings.candidates == "knn":
        return best_from_neighbours(fwd, bwd, settings)
    dx, dy = neighbourhood_terms(fwd, bwd, settings.k, settings.neighbourhood)
    return best_over_all(x, y, dx, dy, settings.margin, settings.block_size)


def _empty_best(nx: int, ny: int) -> Best:
    return Best(
        np.full(nx, -1, np.int64), np.full(nx, -np.inf), np.full(ny, -1, np.int64), np.full(ny, -np.inf)
    )


def retrieve(best: Best, retrieval: str, threshold: float | None = None) -> list[tuple[int, int, float]]:
    """Mined (src, tgt, score) pairs for one retrieval strategy; `threshold` keeps score > threshold."""
    keep = (lambda s: True) if threshold is None else (lambda s: s > threshold)
    fwd = [
        (i, int(j), float(s))
        for i, (j, s) in enumerate(zip(best.fwd_best, best.fwd_score, strict=True))
        if j >= 0
    ]
    bwd = [
        (int(i), j, float(s))
        for j, (i, s) in enumerate(zip(best.bwd_best, best.bwd_score, strict=True))
        if i >= 0
    ]
    if retrieval == "forward":
        return [p for p in fwd if keep(p[2])]
    if retrieval == "backward":
        return sorted(p for p in bwd if keep(p[2]))
    if retrieval == "intersection":
        back = {(i, j) for i, j, _ in bwd}
        return [p for p in fwd if (p[0], p[1]) in back and keep(p[2])]
    if retrieval == "max":  # LASER: pool both directions, best score first, accept one-to-one
        pool = fwd + bwd
        order = sorted(range(len(pool)), key=lambda n: -pool[n][2])  # stable: forward first, then index
        seen_s, seen_t, out = set(), set(), []
        for n in order:
            i, j, s = pool[n]
            if i not in seen_s and j not in seen_t:
                seen_s.add(i)
                seen_t.add(j)
                if keep(s):
                    out.append(pool[n])
        return sorted(out)
    raise ValueError(f"unknown retrieval {retrieval!r}; expected one of {RETRIEVALS}")


def xsim_error_rate(
    x: np.ndarray, y: np.ndarray, margin: str = "absolute", k: int = 4, neighbourhood: str = "mean"
) -> float:
    """xsim: fraction of line-aligned sources whose best target (by margin, all candidates) is not their own."""
    if len(x) != len(y):
        raise ValueError(f"xsim needs line-aligned sets, got {len(x)} and {len(y)} rows")
    if len(x) == 0:
        return 0.0
    s = MineSettings(margin=margin, neighbourhood=neighbourhood, k=k, retrieval=("forward",))
    s.validate()
    best = mine(x, y, s)
    return float(np.mean(best.fwd_best != np.arange(len(x))))


# ---------------------------------------------------------------- evaluation and files


def prf(pred: set[tuple[str, str]], gold: set[tuple[str, str]]) -> dict[str, float | int]:
    """Precision = correct / mined, recall = correct / gold, on deduplicated pairs (as the authors, deduped)."""
    n_correct = len(pred & gold)
    p = n_correct / len(pred) if pred else 0.0
    r = n_correct / len(gold) if gold else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {
        "precision": p,
        "recall": r,
        "f1": f,
        "n_pred": len(pred),
        "n_gold": len(gold),
        "n_correct": n_correct,
    }


@dataclass
class MiningResult:
    pairs: dict[str, list[tuple[str, str, float]]] = field(default_factory=dict)
    n_docs: int = 0


def mine_corpus(
    x: np.ndarray,
    y: np.ndarray,
    src_ids: Sequence[str],
    tgt_ids: Sequence[str],
    src_docs: Sequence[str] | None,
    tgt_docs: Sequence[str] | None,
    settings: MineSettings,
) -> MiningResult:
    """Mine per document pair (documents matched by id) or over the whole corpus; pairs keyed by direction."""
    has_docs = bool(src_docs) and any(src_docs) and bool(tgt_docs) and any(tgt_docs)
    per_doc = has_docs if settings.per_document is None else settings.per_document
    if per_doc and not has_docs:
        raise ValueError("mining setting per_document=true but the sentence files have no doc column values")
    directions = list(dict.fromkeys(["forward", "backward", "intersection", *settings.retrieval]))
    groups: list[tuple[np.ndarray, np.ndarray]]
    if per_doc:
        sd: dict[str, list[int]] = {}
        td: dict[str, list[int]] = {}
        for i, d in enumerate(src_docs):
            sd.setdefault(d, []).append(i)
        for j, d in enumerate(tgt_docs):
            td.setdefault(d, []).append(j)
        groups = [(np.array(sd[d]), np.array(td[d])) for d in sd if d in td]
        skipped = len(sd) + len(td) - 2 * len(groups)
        if skipped:
            log.info("mine: %d documents have no counterpart on the other side and are skipped", skipped)
    else:
        groups = [(np.arange(len(x)), np.arange(len(y)))]
    out = MiningResult(pairs={d: [] for d in directions}, n_docs=len(groups) if per_doc else 0)
    for si, ti in groups:
        best = mine(x[si], y[ti], settings)
        for d in directions:
            for a, b, s in retrieve(best, d, settings.threshold):
                out.pairs[d].append((src_ids[si[a]], tgt_ids[ti[b]], s))
    return out


def read_gold(path: str | Path) -> set[tuple[str, str]]:
    """Gold alignments: TSV with header `src_id<TAB>tgt_id`; deduplicated."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    if not lines or lines[0].split("\t")[:2] != ["src_id", "tgt_id"]:
        raise ValueError(f"{path}:1: expected header 'src_id<TAB>tgt_id'")
    gold = set()
    for n, line in enumerate(lines[1:], start=2):
        parts = line.split("\t")
        if len(parts) != 2 or not all(parts):
            raise ValueError(f"{path}:{n}: expected 'src_id<TAB>tgt_id', got {line!r}")
        gold.add((parts[0], parts[1]))
    return gold


def load_embeddings(emb_path: str | Path, ids: Sequence[str], sents_path: str | Path) -> np.ndarray:
    """Embeddings (memory-mapped), checked against the sentence file's row count and ids."""
    e = np.load(emb_path, mmap_mode="r", allow_pickle=False)
    if e.ndim != 2 or len(e) != len(ids):
        raise ValueError(
            f"{emb_path}: expected {len(ids)} rows (one per sentence of {sents_path}), got shape {e.shape}"
        )
    ids_path = Path(str(emb_path)[: -len(".npy")] + ".ids.txt") if str(emb_path).endswith(".npy") else None
    if ids_path is not None and ids_path.exists():
        got = ids_path.read_text(encoding="utf-8").splitlines()
        for n, (a, b) in enumerate(zip(got, ids, strict=False), start=1):
            if a != b:
                raise ValueError(f"{ids_path}:{n}: id {a!r} differs from {b!r} in {sents_path}")
    return np.asarray(e, dtype=np.float32)


def shard_main(argv: list[str]) -> int:
    """`lem mine knn-shard` (one job per pair of shards) and `lem mine merge-neighbours` (one per shard)."""
    ap = argparse.ArgumentParser(prog="lem mine", description="sharded exact k-NN for corpus-scale mining")
    sub = ap.add_subparsers(dest="verb", required=True)
    a1 = sub.add_parser("knn-shard", help="k-NN both ways between one source shard and one target shard")
    a1.add_argument("--src-emb", required=True)
    a1.add_argument("--src-offset", type=int, required=True, help="global index of the shard's first row")
    a1.add_argument("--tgt-emb", required=True)
    a1.add_argument("--tgt-offset", type=int, required=True)
    a1.add_argument("--k", type=int, required=True)
    a1.add_argument("--block-size", type=int, default=1024)
    a1.add_argument("--out-fwd", required=True, help="neighbours of the source rows (.npz)")
    a1.add_argument("--out-bwd", required=True, help="neighbours of the target rows (.npz)")
    a2 = sub.add_parser(
        "merge-neighbours", help="merge one shard's neighbour lists found in every other shard"
    )
    a2.add_argument("--parts", nargs="+", required=True)
    a2.add_argument("--k", type=int, required=True)
    a2.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    t0 = time.perf_counter()
    if a.verb == "knn-shard":
        x = np.load(a.src_emb, mmap_mode="r", allow_pickle=False)
        y = np.load(a.tgt_emb, allow_pickle=False)
        fwd, bwd = knn_both(x, y, a.k, a.k, a.block_size, a.src_offset, a.tgt_offset)
        save_neighbours(a.out_fwd, fwd)
        save_neighbours(a.out_bwd, bwd)
        log.info("mine knn-shard: %d x %d, k %d; %.1fs", len(x), len(y), a.k, time.perf_counter() - t0)
    else:
        merged = merge_neighbours([load_neighbours(p) for p in a.parts], a.k)
        save_neighbours(a.out, merged)
        log.info(
            "mine merge-neighbours: %d parts, %d rows; %.1fs",
            len(a.parts),
            len(merged.idx),
            time.perf_counter() - t0,
        )
    return 0


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("knn-shard", "merge-neighbours"):
        return shard_main(argv)
    from lem.embed import read_sentences

    ap = argparse.ArgumentParser(prog="lem mine", description=__doc__.splitlines()[0])
    ap.add_argument("--src-emb", required=True)
    ap.add_argument("--src-sents", required=True)
    ap.add_argument("--tgt-emb", required=True)
    ap.add_argument("--tgt-sents", required=True)
    ap.add_argument("--gold", required=True)
    ap.add_argument("--settings", default="{}", help="JSON object of mining settings")
    ap.add_argument("--out-pairs", required=True)
    ap.add_argument("--out-metrics", required=True)
    a = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    t0 = time.perf_counter()
    settings = MineSettings.from_dict(json.loads(a.settings))
    src, tgt = read_sentences(a.src_sents), read_sentences(a.tgt_sents)
    x = load_embeddings(a.src_emb, src.ids, a.src_sents)
    y = load_embeddings(a.tgt_emb, tgt.ids, a.tgt_sents)
    gold = read_gold(a.gold)
    res = mine_corpus(x, y, src.ids, tgt.ids, src.docs, tgt.docs, settings)
    metrics: dict[str, Any] = {}
    for d, pairs in res.pairs.items():
        metrics[d] = prf({(s, t) for s, t, _ in pairs}, gold)
    metrics.update(settings=settings.to_dict(), n_docs=res.n_docs, n_src=len(x), n_tgt=len(y))
    with atomic_path(a.out_pairs) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write("direction\tsrc_id\ttgt_id\tscore\n")
            for d in settings.retrieval:
                for s, t, sc in res.pairs[d]:
                    f.write(f"{d}\t{s}\t{t}\t{sc:.6f}\n")
    write_json(a.out_metrics, metrics)
    m = metrics
    log.info(
        "mine: %d src, %d tgt, %d docs, gold %d; F1 fwd %.3f bwd %.3f int %.3f; %.1fs",
        len(x), len(y), res.n_docs, len(gold), m["forward"]["f1"], m["backward"]["f1"], m["intersection"]["f1"],
        time.perf_counter() - t0,
    )  # fmt: skip
    return 0
