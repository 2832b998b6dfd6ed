"""Margin scoring and retrieval: the method's page (LASER's margin, the news benchmark authors' protocol).

With `candidates: all` (the authors' protocol: the best margin over every candidate, not only the
neighbours), `best_over_all` needs the denominators first, hence a second pass; on a large problem it
settles most sources and targets from their neighbours (a proven bound on every other candidate's
margin) and rescans only the rows and columns of the others. Its blocks reuse preallocated buffers.

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

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from lem.core.settings import SettingsError
from lem.mine.knn import Neighbours, knn_exact, knn_index
from lem.mine.settings import MARGINS, NEIGHBOURHOODS, RETRIEVALS, MineSettings

log = logging.getLogger("lem.mine")

_SCORE_CHUNK = 1 << 20  # bytes of float64 margins scored at a time by `_dense_pass` (stays in cache)
_SETTLE_MIN = 2048  # `best_over_all` settles items from their neighbours when both sides have this many
_PAD = 256  # rows (columns) of the smallest product of `best_over_all`'s partial passes


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
    device: str = "cpu",
) -> np.ndarray:
    """Margin score of each given pair (x[i], y[i]) against each side's k nearest neighbours on the other.

    LASER's scoring of an existing bitext (used to rank a noisy parallel corpus); the neighbour search on
    `device` (`mining.settings.device`).
    """
    if len(x) != len(y):
        raise ValueError(f"pair_margin_scores needs aligned rows, got {len(x)} and {len(y)}")
    fwd, bwd = knn_exact(x, y, k, k, block_size, device)
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


def _settled(
    nb: Neighbours, d_self: np.ndarray, d_other: np.ndarray, kind: str, n_other: int, slack: np.ndarray
):
    """Which items' best candidate over *all* the other side is already among their k nearest neighbours.

    An item is settled when its best neighbour's margin is strictly above a bound on the margin of every
    non-neighbour: their cosine is at most the k-th neighbour's, s_k, and their denominator at least the
    smallest one (ratio: s_k / (d_self + min d_other), or over the largest when s_k < 0, all denominators
    positive; distance: s_k - (d_self + min d_other); absolute: s_k). Rounding is monotone, so the bound
    holds for the float64 margins too, and being strict, no non-neighbour can even tie. `slack` (per item)
    bounds how far another float32 product of the same vectors can be from the first pass's (another
    summation order): the best neighbour's cosine is lowered and s_k raised by it, so the decision holds
    whatever the second pass's BLAS kernel. Returns (settled mask, best index, best margin).
    """
    kk = nb.idx.shape[1]
    best, top = _best_of_candidates(nb, kk, d_self, d_other, kind)
    if kk >= n_other:  # every candidate is a neighbour
        return np.ones(len(best), bool), best, top
    rows = np.arange(len(best))
    at = np.argmax(nb.idx == best[:, None], axis=1)
    s_best = nb.sims[rows, at].astype(np.float64) - slack
    s_k = nb.sims[:, kk - 1].astype(np.float64) + slack
    lo, hi = d_other.min(), d_other.max()
    low = margin(s_best, d_self + d_other[best], kind)  # the best neighbour's margin, at the least
    if kind == "ratio":
        ok = (low > s_k / (d_self + np.where(s_k >= 0, lo, hi))) & (d_self + lo > 0)
    elif kind == "distance":
        ok = low > s_k - (d_self + lo)
    else:
        ok = low > s_k
    return ok, best, top


def _product_slack(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per row of `a`: twice the worst-case error of a float32 dot product with any row of `b` (any summation
    order, then rounded to float32): 2 * gamma_(d+1) * |a_i| * max_j |b_j| (Higham, Cauchy-Schwarz)."""
    u = float(np.finfo(np.float32).eps) / 2
    gamma = (a.shape[1] + 1) * u / (1 - (a.shape[1] + 1) * u)
    norm_b = float(np.sqrt(np.einsum("nd,nd->n", b, b, dtype=np.float64)).max()) if len(b) else 0.0
    return 2 * gamma * np.sqrt(np.einsum("nd,nd->n", a, a, dtype=np.float64)) * norm_b


def _pad(idx: np.ndarray, n: int) -> np.ndarray:
    """At least `_PAD` rows (columns), repeating some, so that a product stays a large one (see
    `best_over_all`); the extra results are dropped."""
    return np.r_[idx, np.arange(_PAD - len(idx)) % n] if len(idx) < _PAD else idx


def _dense_pass(
    x: np.ndarray,
    y: np.ndarray,
    dx: np.ndarray,
    dy: np.ndarray,
    kind: str,
    block_size: int,
    rows_out: tuple[np.ndarray, np.ndarray] | None,
    cols_out: tuple[np.ndarray, np.ndarray] | None,
    no_lone_row: bool = False,
) -> None:
    """Best margin over all of y for every x (into `rows_out` = (best, score)) and over all of x for every y
    (into `cols_out`), from a blocked pass over `x @ y.T`; either may be None (not computed). Blocks are
    those of `knn_both`, or with `no_lone_row` a lone last row joins the block before it (gemm, not gemv).

    Same buffers for every block: the products go into float32 block buffers (two, so that the matmul of
    block i+1 overlaps the scoring of block i, as in `knn_both`), and the scoring walks each block in chunks
    of rows that stay in cache, with preallocated float64 margin and denominator buffers, in place. Margins
    are float64, exactly as `margin()` computes them; ties go to the lowest index (row argmax; columns:
    first maximum within a chunk, strictly better than every earlier chunk).
    """
    nx, ny = len(x), len(y)
    yt = np.ascontiguousarray(y, dtype=np.float32).T
    rows = min(block_size, nx)
    starts = list(range(0, nx, rows))
    if no_lone_row and len(starts) > 1 and nx - starts[-1] == 1:
        starts.pop()
    blocks = [(start, starts[i + 1] if i + 1 < len(starts) else nx) for i, start in enumerate(starts)]
    rows = max(end - start for start, end in blocks)
    bufs = [np.empty((rows, ny), np.float32) for _ in range(2 if len(blocks) > 1 else 1)]
    step = max(1, min(rows, _SCORE_CHUNK // (8 * ny)))
    m, den = np.empty((step, ny)), np.empty((step, ny))
    arg, ar = np.empty(step, np.intp), np.arange(step)
    colmax, better = np.empty(ny), np.empty(ny, bool)
    if cols_out is not None:
        bb, bs = cols_out
        bb.fill(0)
        bs.fill(-np.inf)

    def score(start: int, s32: np.ndarray) -> None:
        for a in range(0, len(s32), step):
            g, r = start + a, min(step, len(s32) - a)
            mm, dd = m[:r], den[:r]
            np.add(dx[g : g + r, None], dy[None, :], out=dd)
            if kind == "ratio":
                np.divide(s32[a : a + r], dd, out=mm)  # float32 -> float64 exactly, then divided
            elif kind == "distance":
                np.subtract(s32[a : a + r], dd, out=mm)
            else:  # absolute: cos + 0 * denom, as `margin()` (same signed zeros and NaNs)
                np.multiply(dd, 0.0, out=dd)
                np.add(s32[a : a + r], dd, out=mm)
            if rows_out is not None:
                aa = arg[:r]
                np.argmax(mm, axis=1, out=aa)  # first maximum: lowest index
                rows_out[0][g : g + r] = aa
                rows_out[1][g : g + r] = mm[ar[:r], aa]
            if cols_out is not None:
                np.max(mm, axis=0, out=colmax)
                np.greater(colmax, bs, out=better)  # strict: an earlier (lower) row keeps a tie
                if better.any():
                    c = np.flatnonzero(better)
                    bb[c] = mm[:, c].argmax(axis=0) + g
                    bs[c] = colmax[c]

    if len(blocks) == 1:
        np.matmul(np.asarray(x, dtype=np.float32), yt, out=bufs[0][:nx])
        score(0, bufs[0][:nx])
        return
    pending = None
    with ThreadPoolExecutor(max_workers=1) as worker:
        for i, (start, end) in enumerate(blocks):
            xb = np.asarray(x[start:end], dtype=np.float32)
            s = bufs[i % 2][: len(xb)]
            np.matmul(xb, yt, out=s)  # the other buffer is still being scored meanwhile
            if pending is not None:
                pending.result()
            pending = worker.submit(score, start, s)
        pending.result()


def best_over_all(
    x: np.ndarray,
    y: np.ndarray,
    dx: np.ndarray,
    dy: np.ndarray,
    kind: str,
    block_size: int,
    fwd: Neighbours | None = None,
    bwd: Neighbours | None = None,
) -> Best:
    """Best candidates among all targets/sources (the authors' protocol).

    A second blocked pass over the whole `x @ y.T`; or, given the first pass's neighbour lists (`fwd`,
    `bwd`) on a large problem, sources and targets whose best is provably among their neighbours are settled
    from them (`_settled`), and only the others get a second pass, over their rows `x[R] @ y.T` and columns
    `x @ y[C].T` (unless the whole pass is cheaper). Same results either way, since the float32 products are
    the same: numpy's gemm gives each product the same bits whatever the shapes, as long as they are large
    (OpenBLAS switches to other kernels for small products, and numpy to gemv for a one-row one, which may
    round differently). Hence the conditions: both sides >= `_SETTLE_MIN` items, d >= 16, blocks of >= 512
    rows, partial products of >= `_PAD` rows or columns, and `knn_both`'s one-row last block (when
    nx = 1 mod block) done as there, one row against every column.
    """
    if kind not in MARGINS:
        raise ValueError(f"unknown margin {kind!r}; expected one of {MARGINS}")
    nx, ny = len(x), len(y)
    fb, fs = np.zeros(nx, np.int64), np.full(nx, -np.inf)
    bb, bs = np.zeros(ny, np.int64), np.full(ny, -np.inf)
    if nx == 0 or ny == 0:
        return Best(fb, fs, bb, bs)
    dx, dy = np.asarray(dx, np.float64), np.asarray(dy, np.float64)
    large = min(nx, ny) >= _SETTLE_MIN and x.shape[1] >= 16 and block_size >= 512
    if fwd is not None and bwd is not None and large:
        ok_r, fb[:], fs[:] = _settled(fwd, dx, dy, kind, ny, _product_slack(x, y))
        ok_c, bb[:], bs[:] = _settled(bwd, dy, dx, kind, nx, _product_slack(y, x))
        todo_r, todo_c = np.flatnonzero(~ok_r), np.flatnonzero(~ok_c)
        log.debug("all candidates: second pass for %d of %d rows and %d of %d columns", len(todo_r), nx, len(todo_c), ny)  # fmt: skip
        if max(len(todo_r), _PAD) * ny + nx * max(len(todo_c), _PAD) < nx * ny:
            _partial_passes(x, y, dx, dy, kind, block_size, todo_r, todo_c, Best(fb, fs, bb, bs))
            return Best(fb, fs, bb, bs)
    _dense_pass(x, y, dx, dy, kind, block_size, (fb, fs), (bb, bs))
    return Best(fb, fs, bb, bs)


def _partial_passes(x, y, dx, dy, kind: str, block_size: int, todo_r, todo_c, out: Best) -> None:
    """The second pass of `best_over_all` for rows `todo_r` and columns `todo_c` only, into `out`."""
    x, y = np.asarray(x), np.asarray(y)
    nx, ny = len(x), len(y)
    lone = nx - 1 if nx % block_size == 1 else -1  # `knn_both`'s one-row last block (a gemv there)
    if len(todo_r):
        for part in (todo_r[todo_r != lone], todo_r[todo_r == lone]):
            if len(part):
                r = _pad(part, nx) if part[0] != lone else part
                rb, rs = np.zeros(len(r), np.int64), np.empty(len(r))
                _dense_pass(x[r], y, dx[r], dy, kind, block_size, (rb, rs), None, no_lone_row=True)
                out.fwd_best[part], out.fwd_score[part] = rb[: len(part)], rs[: len(part)]
    if len(todo_c):
        c = _pad(todo_c, ny)
        cb, cs = np.zeros(len(c), np.int64), np.empty(len(c))
        main = nx - 1 if lone >= 0 else nx  # blocks as in `knn_both`, but for the lone row
        _dense_pass(x[:main], y[c], dx[:main], dy[c], kind, block_size, None, (cb, cs))
        if lone >= 0:  # as in the first pass: the lone row against every column (gemv), then columns c
            s = np.matmul(np.asarray(x[lone:], dtype=np.float32), np.ascontiguousarray(y, dtype=np.float32).T)
            m = margin(s[0, c].astype(np.float64), dx[lone] + dy[c], kind)
            better = m > cs  # strict: earlier rows keep a tie
            cb[better], cs[better] = lone, m[better]
        n = len(todo_c)
        out.bwd_best[todo_c], out.bwd_score[todo_c] = cb[:n], cs[:n]


def mine(x: np.ndarray, y: np.ndarray, settings: MineSettings) -> Best:
    """Best target of every source and best source of every target under the configured margin."""
    if len(x) == 0 or len(y) == 0:
        return _empty_best(len(x), len(y))
    kk = settings.neighbours
    if settings.index == "exact":  # on settings.device; the second pass of `all` stays numpy's
        fwd, bwd = knn_exact(x, y, kk, kk, settings.block_size, settings.device)
    else:
        fwd, bwd = knn_index(x, y, kk, settings)
    if settings.candidates == "knn":
        return best_from_neighbours(fwd, bwd, settings)
    dx, dy = neighbourhood_terms(fwd, bwd, settings.k, settings.neighbourhood)
    return best_over_all(x, y, dx, dy, settings.margin, settings.block_size, fwd, bwd)


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


@dataclass
class MiningResult:
    pairs: dict[str, list[tuple[str, str, float]]] = field(default_factory=dict)
    n_docs: int = 0


def document_groups(
    src_docs: Sequence[str] | None,
    tgt_docs: Sequence[str] | None,
    n_src: int,
    n_tgt: int,
    per_document: bool | None = None,
) -> tuple[bool, list[tuple[np.ndarray, np.ndarray]]]:
    """The candidate groups of a mining run: per document present on both sides (the default when both
    sentence files have document ids; `per_document` forces it) the row indices of its sources and targets,
    else one group of every row. Returns (per document?, groups in source document order)."""
    has_docs = bool(src_docs) and any(src_docs) and bool(tgt_docs) and any(tgt_docs)
    per_doc = has_docs if per_document is None else per_document
    if per_doc and not has_docs:
        raise SettingsError(
            "mining setting per_document=true but the sentence files have no doc column values"
        )
    if not per_doc:
        return False, [(np.arange(n_src), np.arange(n_tgt))]
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
    return True, groups


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
    per_doc, groups = document_groups(src_docs, tgt_docs, len(x), len(y), settings.per_document)
    directions = list(dict.fromkeys(["forward", "backward", "intersection", *settings.retrieval]))
    out = MiningResult(pairs={d: [] for d in directions}, n_docs=len(groups) if per_doc else 0)
    for si, ti in groups:
        best = mine(x[si], y[ti], settings)
        for d in directions:
            for a, b, s in retrieve(best, d, settings.threshold):
                out.pairs[d].append((src_ids[si[a]], tgt_ids[ti[b]], s))
    return out
