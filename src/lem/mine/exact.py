"""The exact speed-up of `candidates: all` (`lem.mine.margin.best_over_all`, the authors' protocol): the same
results, bit for bit, as a second pass over the whole `x @ y.T`, in less time.

The best margin over every candidate needs the denominators first, hence a second pass; on a large problem
this module settles most sources and targets from their neighbours (a proven bound on every other
candidate's margin, float rounding included) and rescans only the rows and columns of the others. Its blocks
reuse preallocated buffers. It computes the margin of `lem.mine.margin.margin` in place, by the same
operations (so the same bits), and knows nothing else of the method: `lem.mine.margin` imports it.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from lem.mine.knn import Neighbours

log = logging.getLogger("lem.mine")

_SCORE_CHUNK = 1 << 20  # bytes of float64 margins scored at a time by `_dense_pass` (stays in cache)
_SETTLE_MIN = 2048  # `best_of_all` settles items from their neighbours when both sides have this many
_PAD = 256  # rows (columns) of the smallest product of `best_of_all`'s partial passes

Arrays = tuple[np.ndarray, np.ndarray]  # (best index, best margin) of every item of one side


def settles(x: np.ndarray, y: np.ndarray, block_size: int) -> bool:
    """Whether `best_of_all` settles items from their neighbours on this problem: large enough that every
    float32 product it computes again has the first pass's bits (see `best_of_all`)."""
    return min(len(x), len(y)) >= _SETTLE_MIN and x.shape[1] >= 16 and block_size >= 512


def best_of_all(
    x: np.ndarray,
    y: np.ndarray,
    dx: np.ndarray,
    dy: np.ndarray,
    kind: str,
    block_size: int,
    fwd: Neighbours | None = None,
    bwd: Neighbours | None = None,
    near: tuple[Arrays, Arrays] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(best target, its margin) of every source and (best source, its margin) of every target, over all of
    the other side, with float64 denominator terms `dx`, `dy`.

    A second blocked pass over the whole `x @ y.T`; or, given the first pass's neighbour lists (`fwd`,
    `bwd`) and the best among them (`near`: (best, margin) forward, then backward) on a problem that
    `settles`, sources and targets whose best is provably among their neighbours are settled from them
    (`_settled`), and only the others get a second pass, over their rows `x[R] @ y.T` and columns
    `x @ y[C].T` (unless the whole pass is cheaper). Same results either way, since the float32 products are
    the same: numpy's gemm gives each product the same bits whatever the shapes, as long as they are large
    (OpenBLAS switches to other kernels for small products, and numpy to gemv for a one-row one, which may
    round differently). Hence the conditions: both sides >= `_SETTLE_MIN` items, d >= 16, blocks of >= 512
    rows, partial products of >= `_PAD` rows or columns, and `knn_both`'s one-row last block (when
    nx = 1 mod block) done as there, one row against every column.
    """
    nx, ny = len(x), len(y)
    fb, fs = np.zeros(nx, np.int64), np.full(nx, -np.inf)
    bb, bs = np.zeros(ny, np.int64), np.full(ny, -np.inf)
    if nx == 0 or ny == 0:
        return fb, fs, bb, bs
    if fwd is not None and bwd is not None and near is not None:
        (fb[:], fs[:]), (bb[:], bs[:]) = near
        ok_r = _settled(fwd, fb, dx, dy, kind, ny, _product_slack(x, y))
        ok_c = _settled(bwd, bb, dy, dx, kind, nx, _product_slack(y, x))
        todo_r, todo_c = np.flatnonzero(~ok_r), np.flatnonzero(~ok_c)
        log.debug("all candidates: second pass for %d of %d rows and %d of %d columns", len(todo_r), nx, len(todo_c), ny)  # fmt: skip
        if max(len(todo_r), _PAD) * ny + nx * max(len(todo_c), _PAD) < nx * ny:
            _partial_passes(x, y, dx, dy, kind, block_size, todo_r, todo_c, (fb, fs), (bb, bs))
            return fb, fs, bb, bs
    _dense_pass(x, y, dx, dy, kind, block_size, (fb, fs), (bb, bs))
    return fb, fs, bb, bs


def _margin_into(cos: np.ndarray, den: np.ndarray, kind: str, out: np.ndarray | None = None) -> np.ndarray:
    """`lem.mine.margin.margin(cos, den, kind)` by the same operations, so the same bits, into `out`
    (a float32 `cos` becomes float64 exactly); `absolute` overwrites `den` (with 0 * den)."""
    if kind == "ratio":
        return np.divide(cos, den, out=out)
    if kind == "distance":
        return np.subtract(cos, den, out=out)
    np.multiply(den, 0.0, out=den)  # absolute: cos + 0 * denom (the same signed zeros and NaNs)
    return np.add(cos, den, out=out)


def _settled(
    nb: Neighbours, best: np.ndarray, d_self: np.ndarray, d_other: np.ndarray, kind: str, n_other: int,
    slack: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """Which items' best candidate over *all* the other side is already `best`, their best among their k
    nearest neighbours.

    An item is settled when its best neighbour's margin is strictly above a bound on the margin of every
    non-neighbour: their cosine is at most the k-th neighbour's, s_k, and their denominator at least the
    smallest one (ratio: s_k / (d_self + min d_other), or over the largest when s_k < 0, all denominators
    positive; distance: s_k - (d_self + min d_other); absolute: s_k). Rounding is monotone, so the bound
    holds for the float64 margins too, and being strict, no non-neighbour can even tie. `slack` (per item)
    bounds how far another float32 product of the same vectors can be from the first pass's (another
    summation order): the best neighbour's cosine is lowered and s_k raised by it, so the decision holds
    whatever the second pass's BLAS kernel. Returns the settled mask.
    """
    kk = nb.idx.shape[1]
    if kk >= n_other:  # every candidate is a neighbour
        return np.ones(len(best), bool)
    rows = np.arange(len(best))
    at = np.argmax(nb.idx == best[:, None], axis=1)
    s_best = nb.sims[rows, at].astype(np.float64) - slack
    s_k = nb.sims[:, kk - 1].astype(np.float64) + slack
    lo, hi = d_other.min(), d_other.max()
    low = _margin_into(s_best, d_self + d_other[best], kind)  # the best neighbour's margin, at the least
    if kind == "ratio":
        return (low > s_k / (d_self + np.where(s_k >= 0, lo, hi))) & (d_self + lo > 0)
    if kind == "distance":
        return low > s_k - (d_self + lo)
    return low > s_k


def _product_slack(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per row of `a`: twice the worst-case error of a float32 dot product with any row of `b` (any summation
    order, then rounded to float32): 2 * gamma_(d+1) * |a_i| * max_j |b_j| (Higham, Cauchy-Schwarz)."""
    u = float(np.finfo(np.float32).eps) / 2
    gamma = (a.shape[1] + 1) * u / (1 - (a.shape[1] + 1) * u)
    norm_b = float(np.sqrt(np.einsum("nd,nd->n", b, b, dtype=np.float64)).max()) if len(b) else 0.0
    return 2 * gamma * np.sqrt(np.einsum("nd,nd->n", a, a, dtype=np.float64)) * norm_b


def _pad(idx: np.ndarray, n: int) -> np.ndarray:
    """At least `_PAD` rows (columns), repeating some, so that a product stays a large one (see
    `best_of_all`); the extra results are dropped."""
    return np.r_[idx, np.arange(_PAD - len(idx)) % n] if len(idx) < _PAD else idx


def _dense_pass(
    x: np.ndarray,
    y: np.ndarray,
    dx: np.ndarray,
    dy: np.ndarray,
    kind: str,
    block_size: int,
    rows_out: Arrays | None,
    cols_out: Arrays | None,
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
            _margin_into(s32[a : a + r], dd, kind, out=mm)
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


def _partial_passes(
    x, y, dx, dy, kind: str, block_size: int, todo_r, todo_c, rows_out: Arrays, cols_out: Arrays
) -> None:
    """The second pass of `best_of_all` for rows `todo_r` and columns `todo_c` only, into `rows_out` and
    `cols_out` ((best, score) of every row, of every column)."""
    x, y = np.asarray(x), np.asarray(y)
    nx, ny = len(x), len(y)
    lone = nx - 1 if nx % block_size == 1 else -1  # `knn_both`'s one-row last block (a gemv there)
    if len(todo_r):
        for part in (todo_r[todo_r != lone], todo_r[todo_r == lone]):
            if len(part):
                r = _pad(part, nx) if part[0] != lone else part
                rb, rs = np.zeros(len(r), np.int64), np.empty(len(r))
                _dense_pass(x[r], y, dx[r], dy, kind, block_size, (rb, rs), None, no_lone_row=True)
                rows_out[0][part], rows_out[1][part] = rb[: len(part)], rs[: len(part)]
    if len(todo_c):
        c = _pad(todo_c, ny)
        cb, cs = np.zeros(len(c), np.int64), np.empty(len(c))
        main = nx - 1 if lone >= 0 else nx  # blocks as in `knn_both`, but for the lone row
        _dense_pass(x[:main], y[c], dx[:main], dy[c], kind, block_size, None, (cb, cs))
        if lone >= 0:  # as in the first pass: the lone row against every column (gemv), then columns c
            s = np.matmul(np.asarray(x[lone:], dtype=np.float32), np.ascontiguousarray(y, dtype=np.float32).T)
            m = _margin_into(s[0, c].astype(np.float64), dx[lone] + dy[c], kind)
            better = m > cs  # strict: earlier rows keep a tie
            cb[better], cs[better] = lone, m[better]
        n = len(todo_c)
        cols_out[0][todo_c], cols_out[1][todo_c] = cb[:n], cs[:n]
