"""Mining's chance level and ceiling: what P/R/F1 a system that knows nothing scores, and the best any system
can reach, under a mining run's candidate structure (recorded by `lem mine run` next to its values).

Mining (P/R/F1 of `lem.mine.prf`, per retrieval direction), given the candidate structure: one group per
document pair (per-document candidates) or one group of all sources x all targets. A system that knows
nothing is exchangeable over a group's n sources and m targets, so each of its mined pairs is a gold one
with probability g / (n m) (g gold links in the group): E[tp] = E[pred] g / (n m), and only the expected
number of mined pairs is needed:
  forward      each source retrieves one target: E[pred] = n, E[tp] = g / m (exact)
  backward     each target retrieves one source: E[pred] = m, E[tp] = g / n (exact)
  intersection mutual best pairs: a pair is one when its score is the largest of the n + m - 1 scores of
               its row and column, probability 1 / (n + m - 1) for i.i.d. scores (cosines of random
               embeddings): E[pred] = n m / (n + m - 1). A ratio or distance margin gives more mutual pairs
               (it penalises hubs), `max` and a threshold depend on the scores: these counts are simulated
               with random embeddings mined with the same settings.
Pooled over groups (as `prf` pools), chance precision = sum E[tp] / sum E[pred], recall = sum E[tp] / G
(G: every gold link, also those no group can reach) and F1 = 2 sum E[tp] / (sum E[pred] + G): ratios of
expectations (`mining_chance_analytic`). `mining_chance_permutation` estimates the chance of a given
model instead: it mines the model's embeddings with the targets' rows permuted within each document (all
targets when mining the whole corpus), the same as shuffling the gold targets within documents
(`lem.evidence.controls.shuffle_gold_within_documents`), so the embeddings' own geometry is kept. The chance
levels of the other tasks' metrics, which need no stage, are `lem.evidence.chance`'s.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lem.evidence.stats import prf_counts
from lem.mine.evaluate import prf
from lem.mine.knn import Neighbours
from lem.mine.margin import (
    best_from_neighbours,
    best_over_all,
    document_groups,
    mine_corpus,
    neighbourhood_terms,
    retrieve,
)
from lem.mine.settings import MineSettings

# Imported inside functions: scipy (`lem mine --help` imports this module and needs no scipy: only the mining
# ceiling does)

ANALYTIC_RETRIEVALS = ("forward", "backward", "intersection")  # the default directions of the analytic chance
RETRIEVALS_ALL = ("forward", "backward", "intersection", "max")  # lem.mine.RETRIEVALS


@dataclass(frozen=True)
class Group:
    """One candidate group of mining: its number of sources, of targets and of gold links inside it."""

    n_src: int
    n_tgt: int
    n_gold: int


def _per_document(
    src_docs: Sequence[str] | None, tgt_docs: Sequence[str] | None, per_document: bool | None
) -> bool:
    """`lem.mine`'s choice (`document_groups`): per document when both sides have doc ids (unless set)."""
    n_s, n_t = len(src_docs or ()), len(tgt_docs or ())
    return document_groups(src_docs, tgt_docs, n_s, n_t, per_document)[0]


def candidate_groups(
    src_ids: Sequence[str],
    tgt_ids: Sequence[str],
    src_docs: Sequence[str] | None,
    tgt_docs: Sequence[str] | None,
    gold: Iterable[tuple[str, str]],
    per_document: bool | None = None,
) -> tuple[list[Group], int]:
    """The candidate structure of a mining run, as `lem.mine.mine_corpus` builds it: one `Group` per
    document present on both sides (or one of the whole corpus), each with its gold links counted, and the
    number of deduplicated gold links in all (those across documents or to a missing document count in
    recall but no group can find them)."""
    gold = set(gold)
    _, groups = document_groups(src_docs, tgt_docs, len(src_ids), len(tgt_ids), per_document)
    group_of_s = {src_ids[i]: k for k, (si, _) in enumerate(groups) for i in si}
    group_of_t = {tgt_ids[j]: k for k, (_, ti) in enumerate(groups) for j in ti}
    inside = [0] * len(groups)
    for s_, t_ in gold:
        k = group_of_s.get(s_)
        if k is not None and group_of_t.get(t_) == k:
            inside[k] += 1
    return [Group(len(si), len(ti), g) for (si, ti), g in zip(groups, inside, strict=True)], len(gold)


def _groups_array(groups: Iterable[Group | tuple[int, int, int]]) -> np.ndarray:
    a = np.array(
        [tuple(g) if not isinstance(g, Group) else (g.n_src, g.n_tgt, g.n_gold) for g in groups], np.float64
    )
    if a.size == 0:
        return np.zeros((0, 3))
    if a.ndim != 2 or a.shape[1] != 3 or (a < 0).any():
        raise ValueError("mining chance: expected groups of (n_src, n_tgt, n_gold) non-negative counts")
    if (a[:, 2] > a[:, 0] * a[:, 1]).any():
        raise ValueError("mining chance: a group has more gold links than source x target pairs")
    return a


def _prf(tp: float, pred: float, gold: float) -> dict[str, float]:
    """`lem.evidence.stats.prf_counts` of expected (or best reachable) counts, with the counts."""
    return {**prf_counts(tp, pred, gold), "n_pred": pred, "n_correct": tp}


# rows at least this long are searched by partition (`top_k_stable`); shorter ones sorted whole, which is faster
# there (bench/mining_chance.py: a news set's documents of 4-12 sentences; 8 x 8: 6 us sorted, 41 us by partition;
# 64 x 64: 119 and 98; 256 x 256: 3,375 and 1,071; AMD EPYC, 2026-11-29)
PARTITION_FROM = 64


def top_k_stable(s: np.ndarray, k: int) -> np.ndarray:
    """The column indices of the k largest values of every row of `s`, best first, equal values in column
    order: exactly `np.argsort(-s, axis=1, kind="stable")[:, :k]`; rows of `PARTITION_FROM` values or more
    without sorting them whole (a row's k-th value by partition, then only the columns at or above it sorted;
    the chance simulation of a 384 x 384 set spent 5 of its 6 seconds in the whole-row sorts)."""
    n, m = s.shape
    k = min(k, m)
    if k == 0 or n == 0:
        return np.zeros((n, k), np.int64)
    neg = -s
    if m < PARTITION_FROM:
        return np.argsort(neg, axis=1, kind="stable")[:, :k].astype(np.int64)
    kth = np.partition(neg, k - 1, axis=1)[:, k - 1 : k]  # a row's k-th smallest of -s: its k-th largest of s
    rows, cols = np.nonzero(neg <= kth)  # every candidate (more than k where values tie at the k-th)
    order = np.lexsort((cols, neg[rows, cols], rows))  # by row, then value (largest s first), then column
    rows, cols = rows[order], cols[order]
    starts = np.searchsorted(rows, np.arange(n))
    return cols[starts[:, None] + np.arange(k)[None, :]].astype(np.int64)


def _small_knn(s: np.ndarray, k: int) -> Any:
    """The k nearest (largest similarity) of every row of `s`, best first, as `lem.mine.Neighbours`."""
    idx = top_k_stable(s, k)
    return Neighbours(np.take_along_axis(s, idx, axis=1).astype(np.float32), idx)


def _mine_small(x: np.ndarray, y: np.ndarray, settings: Any) -> Any:
    """`lem.mine.mine` for a small exact problem, its neighbour search done here in one product (`mine`'s
    own search starts a worker thread per call, which dominates on documents of a few sentences); the
    margins and best candidates are `lem.mine`'s own functions. Used on random embeddings only (no ties)."""
    kk = settings.neighbours
    s = x @ y.T
    fwd, bwd = _small_knn(s, kk), _small_knn(s.T, kk)
    if settings.candidates == "knn":
        return best_from_neighbours(fwd, bwd, settings)
    dx, dy = neighbourhood_terms(fwd, bwd, settings.k, settings.neighbourhood)
    return best_over_all(x, y, dx, dy, settings.margin, settings.block_size)


def _expected_predictions(
    shapes: np.ndarray, retrievals: Sequence[str], settings: Any, n_sim: int, dim: int, seed: int
) -> dict[str, dict[tuple[int, int], float]]:
    """Mean number of pairs each retrieval mines from random unit Gaussian embeddings, per (n_src, n_tgt)."""
    out: dict[str, dict[tuple[int, int], float]] = {r: {} for r in retrievals}
    for n, m in sorted({(int(a), int(b)) for a, b in shapes}):
        rng = np.random.default_rng([seed, n, m])
        total = dict.fromkeys(retrievals, 0)
        for _ in range(n_sim):
            x = rng.standard_normal((n, dim)).astype(np.float32)
            y = rng.standard_normal((m, dim)).astype(np.float32)
            x /= np.linalg.norm(x, axis=1, keepdims=True)
            y /= np.linalg.norm(y, axis=1, keepdims=True)
            best = _mine_small(x, y, settings)
            for r in retrievals:
                total[r] += len(retrieve(best, r, settings.threshold))
        for r in retrievals:
            out[r][(n, m)] = total[r] / n_sim
    return out


def mining_chance_analytic(
    groups: Iterable[Group | tuple[int, int, int]],
    n_gold: int | None = None,
    retrieval: Sequence[str] = ANALYTIC_RETRIEVALS,
    settings: Any = None,
    n_sim: int = 200,
    dim: int = 64,
    seed: int = 0,
) -> dict[str, Any]:
    """Chance P/R/F1 of each retrieval direction for a system that knows nothing (module docstring).

    `groups`: (n_src, n_tgt, n_gold) per candidate group (`candidate_groups`); `n_gold`: the gold links in
    all (default: the sum over groups). For any system exchangeable over a group's candidates, every
    candidate pair is equally likely to be mined, so E[tp] = E[pred] * g / (n m) in each group: only the
    expected number of mined pairs is needed. It is exact for forward (n) and backward (m); for
    intersection it is n m / (n + m - 1) for i.i.d. scores, which `settings` = None or an `absolute` margin
    gets (the cosines of random embeddings). A ratio or distance margin makes mutual pairs more frequent
    (its denominators penalise hubs: about 25 % more in documents of 7 x 10 sentences), and `max` and a
    threshold depend on the scores: with such `settings` (a `MineSettings` or its dict) the expected count
    per group shape is simulated by mining random unit Gaussian embeddings (`dim`) `n_sim` times, seeded.

    Returns {direction: {"precision", "recall", "f1", "n_pred", "n_correct"} (expected counts; the metrics
    as pooled ratios of expectations), "method": ...}.
    """
    bad = [r for r in retrieval if r not in RETRIEVALS_ALL]
    if bad:
        raise ValueError(f"mining chance: unknown retrieval {bad}; expected some of {RETRIEVALS_ALL}")
    if isinstance(settings, dict):
        settings = MineSettings.from_dict(settings)
    if isinstance(n_sim, bool) or not isinstance(n_sim, int) or n_sim < 1:
        raise ValueError(f"mining chance: n_sim={n_sim!r}: expected a number of simulations >= 1")
    a = _groups_array(groups)
    a = a[(a[:, 0] > 0) & (a[:, 1] > 0)]  # an empty side mines nothing
    n, m, g = a[:, 0], a[:, 1], a[:, 2]
    total_gold = float(g.sum()) if n_gold is None else float(n_gold)
    if total_gold < g.sum():
        raise ValueError(
            f"mining chance: n_gold={n_gold} is below the {int(g.sum())} gold links inside the groups"
        )
    threshold = settings is not None and settings.threshold is not None
    iid = settings is None or settings.margin == "absolute"
    exact = {
        "forward": (n, "forward exact"),
        "backward": (m, "backward exact"),
        "intersection": (n * m / (n + m - 1), "intersection n*m/(n+m-1) mutual pairs (i.i.d. scores)"),
    }
    if threshold:
        exact = {}
    elif not iid:
        del exact["intersection"]
    simulate = [r for r in retrieval if r not in exact]
    if simulate and settings is None:
        raise ValueError(f"mining chance: retrieval {simulate} needs the mining settings (simulated counts)")
    if simulate and settings.index != "exact":
        settings = dataclasses.replace(settings, index="exact")  # an index only approximates the same search
    sims = _expected_predictions(a[:, :2], simulate, settings, n_sim, dim, seed) if simulate else {}
    out: dict[str, Any] = {}
    how = []
    for r in retrieval:
        if r in exact:
            pred, note = exact[r]
        else:
            pred = np.array([sims[r][(int(x), int(y))] for x, y in a[:, :2]])
            note = f"{r} pair counts simulated ({n_sim} random embeddings of dim {dim} per group shape)"
        tp = pred * g / (n * m)
        out[r] = _prf(float(tp.sum()), float(pred.sum()), total_gold)
        how.append(note)
    out["method"] = (
        "analytic: a system exchangeable over each group's candidates, E[tp] = E[pred] g/(n m); "
        + "; ".join(how)
        + "; pooled ratios of expectations"
    )
    return out


def mining_chance_permutation(
    src_emb: np.ndarray,
    tgt_emb: np.ndarray,
    src_ids: Sequence[str],
    tgt_ids: Sequence[str],
    src_docs: Sequence[str] | None,
    tgt_docs: Sequence[str] | None,
    gold: Iterable[tuple[str, str]],
    settings: Any = None,
    n: int = 20,
    seed: int = 0,
) -> dict[str, Any]:
    """Chance P/R/F1 estimated by mining: the target embeddings' rows are permuted within each document (all
    targets at once when mining the whole corpus), the ids kept, and `lem.mine.mine_corpus` is run `n`
    times with `settings` (a `MineSettings` or its dict; default the authors' protocol). Every retrieval of
    the settings, also `max` and a threshold, is covered, and the embeddings' own geometry (hubs, how many
    mutual pairs) is kept: only which target is whose is lost.

    Returns {direction: {"precision", "recall", "f1" (means over the permutations), "sd": {metric: standard
    deviation}}, "n_permutations", "seed", "method"}.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"mining_chance_permutation: n={n!r}: expected a number of permutations >= 1")
    if settings is None or isinstance(settings, dict):
        settings = MineSettings.from_dict(settings or {})
    x = np.asarray(src_emb, np.float32)
    y = np.asarray(tgt_emb, np.float32)
    if len(x) != len(src_ids) or len(y) != len(tgt_ids):
        raise ValueError(
            f"mining_chance_permutation: {len(x)} source and {len(y)} target rows for {len(src_ids)} and "
            f"{len(tgt_ids)} ids"
        )
    gold = set(gold)
    per_doc = _per_document(src_docs, tgt_docs, settings.per_document)
    if per_doc:
        blocks: dict[str, list[int]] = {}
        for j, d in enumerate(tgt_docs):
            blocks.setdefault(d, []).append(j)
        parts = [np.array(v) for v in blocks.values()]
    else:
        parts = [np.arange(len(y))]
    rng = np.random.default_rng(seed)
    runs: dict[str, list[tuple[float, float, float]]] = {}
    for _ in range(n):
        perm = np.arange(len(y))
        for idx in parts:
            perm[idx] = idx[rng.permutation(len(idx))]
        res = mine_corpus(x, y[perm], src_ids, tgt_ids, src_docs, tgt_docs, settings)
        for d, pairs in res.pairs.items():
            m = prf({(s, t) for s, t, _ in pairs}, gold)
            runs.setdefault(d, []).append((m["precision"], m["recall"], m["f1"]))
    out: dict[str, Any] = {}
    for d, vals in runs.items():
        v = np.array(vals)
        out[d] = {
            "precision": float(v[:, 0].mean()),
            "recall": float(v[:, 1].mean()),
            "f1": float(v[:, 2].mean()),
            "sd": {
                k: float(v[:, i].std(ddof=1)) if n > 1 else 0.0
                for i, k in enumerate(("precision", "recall", "f1"))
            },
        }
    out.update(
        n_permutations=n,
        seed=seed,
        method=(
            f"permutation: target rows permuted within {'documents' if per_doc else 'the corpus'}, "
            f"mined {n} times with the same settings; mean over permutations"
        ),
    )
    return out


def mining_ceiling(
    src_ids: Sequence[str],
    tgt_ids: Sequence[str],
    src_docs: Sequence[str] | None,
    tgt_docs: Sequence[str] | None,
    gold: Iterable[tuple[str, str]],
    per_document: bool | None = None,
) -> dict[str, Any]:
    """The best P/R/F1 any system can reach per direction, given the candidate structure (the other end of
    the scale from chance): forward mines one target for *every* source (also the sources without a gold
    link), so at best tp = the sources with a reachable gold link and pred = every source of a group;
    backward likewise; intersection may mine exactly a largest one-to-one subset of the reachable gold links.
    Returns {direction: {"precision", "recall", "f1", "n_pred", "n_correct"}, "method"}."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_bipartite_matching

    gold = set(gold)
    per_doc = _per_document(src_docs, tgt_docs, per_document)
    doc_s = dict(zip(src_ids, src_docs, strict=True)) if per_doc else dict.fromkeys(src_ids, "")
    doc_t = dict(zip(tgt_ids, tgt_docs, strict=True)) if per_doc else dict.fromkeys(tgt_ids, "")
    both = set(doc_s.values()) & set(doc_t.values())
    n_src = sum(1 for d in doc_s.values() if d in both)
    n_tgt = sum(1 for d in doc_t.values() if d in both)
    reach = sorted((s, t) for s, t in gold if s in doc_s and doc_t.get(t, None) == doc_s[s])
    srcs = sorted({s for s, _ in reach})
    tgts = sorted({t for _, t in reach})
    if reach:
        si = {s: i for i, s in enumerate(srcs)}
        ti = {t: i for i, t in enumerate(tgts)}
        graph = csr_matrix(
            (np.ones(len(reach)), ([si[s] for s, _ in reach], [ti[t] for _, t in reach])),
            shape=(len(srcs), len(tgts)),
        )
        matched = int((maximum_bipartite_matching(graph, perm_type="column") >= 0).sum())
    else:
        matched = 0
    total = len(gold)
    return {
        "forward": _prf(len(srcs), n_src, total),
        "backward": _prf(len(tgts), n_tgt, total),
        "intersection": _prf(matched, matched, total),
        "method": "ceiling: the best any system can mine given the candidate groups and the gold links",
    }
