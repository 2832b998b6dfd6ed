"""Margin scoring and retrieval: the method's page (LASER's margin, the news benchmark authors' protocol).

Margins (LASER, Artetxe & Schwenk 2019), with r(a) the k nearest similarities of a on the other side:
  ratio     cos(a, b) / denom(a, b)
  distance  cos(a, b) - denom(a, b)
  absolute  cos(a, b)
  denom `mean` (LASER):    (mean r(a) + mean r(b)) / 2
  denom `pooled` (authors): (sum r(a) + sum r(b)) / (|r(a)| + |r(b)|)
Both denominators agree when each side has at least k sentences; they differ in short documents.
Ties are broken towards the lowest index everywhere (neighbours, best candidate, greedy `max` order).

With `candidates: all` (the authors' protocol: the best margin over every candidate, not only the
neighbours), `best_over_all` needs the denominators first, hence a second pass over `x @ y.T`; its exact
speed-up (float-error bounds that settle most items from their neighbours) is `lem.mine.exact`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from lem.core.settings import SettingsError
from lem.mine import exact
from lem.mine.knn import Neighbours, knn_exact, knn_index
from lem.mine.settings import MARGINS, NEIGHBOURHOODS, RETRIEVALS, MineSettings

log = logging.getLogger("lem.mine")


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
    """Best candidates among all targets/sources (the authors' protocol): the best margin of every source over
    every target and of every target over every source, from a second pass over `x @ y.T`. Given the first
    pass's neighbour lists (`fwd`, `bwd`), a large problem settles most items from their best neighbour and
    rescans only the others (`lem.mine.exact`): the same results, bit for bit."""
    if kind not in MARGINS:
        raise ValueError(f"unknown margin {kind!r}; expected one of {MARGINS}")
    dx, dy = np.asarray(dx, np.float64), np.asarray(dy, np.float64)
    near = None
    if fwd is not None and bwd is not None and exact.settles(x, y, block_size):
        # the best among every neighbour each way: the best over all for most items
        near = (
            _best_of_candidates(fwd, fwd.idx.shape[1], dx, dy, kind),
            _best_of_candidates(bwd, bwd.idx.shape[1], dy, dx, kind),
        )
    return Best(*exact.best_of_all(x, y, dx, dy, kind, block_size, fwd, bwd, near))


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
