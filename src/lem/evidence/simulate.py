"""Simulated runs with the real design's variance parts, for calibrating and sizing the two-level test.

A `Design` says where two recipes' scores vary: a recipe's skill on the logit scale, moved per pre-training
seed by a normal draw (`seed_sd`); in the embedded default's design seed s of both recipes continues base
model s, so part of the seed draw is shared by the two recipes (`base_sd`), while at paper scale
(`hub=True`) every seed continues one hub model and nothing is shared; a share of runs collapse
(`collapse`: their skill falls by `collapse_drop`); each test item has a difficulty shared by both recipes
(`item_sd`) and a recipe-by-item part drawn once per recipe and shared by all its seeds (`rbi_sd`: the part
a test over seeds alone never sees); each outcome is then a Bernoulli draw. Downstream tasks add runs
nested in each pre-training seed (`runs`, fine-tuning seeds with their own normal draw `run_sd`).

`simulate(task, design, sims, rng, delta)` returns two recipes' per-item rows, shape (sims, seeds, runs,
units, stats), in the layout each task's statistic reads (`STATISTICS`): mining per-document [correct,
mined, gold] counts (F1), sentiment per-example macro-F1 indicators over three labels, curation per-pair
[kept and clean, kept] (precision of the kept set), NMT per-sentence BLEU statistics (scored by
`lem.nmt.bleu.bleu_from_sums`, which the stage-free `STATISTICS` leaves to the caller).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lem.evidence import stats


@dataclass(frozen=True)
class Design:
    seeds: int = 3
    units: int = 105
    runs: int = 1
    seed_sd: float = 0.15  # logit units: ~0.03-0.04 F1 around 0.3
    base_sd: float = 0.15
    hub: bool = False
    collapse: float = 0.0
    collapse_drop: float = 1.5
    item_sd: float = 0.5
    rbi_sd: float = 0.0
    run_sd: float = 0.1


def _logistic(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _skills(task_level: float, d: Design, sims: int, rng: np.random.Generator, delta: float):
    """Per recipe, (sims, seeds, runs, units) logits of success."""
    shape_seed = (sims, d.seeds, 1, 1)
    base = np.zeros(shape_seed) if d.hub else rng.normal(0, d.base_sd, shape_seed)
    item = rng.normal(0, d.item_sd, (sims, 1, 1, d.units))
    out = []
    for shift in (delta, 0.0):
        seed = rng.normal(0, d.seed_sd, shape_seed)
        if d.collapse > 0:
            seed = seed - d.collapse_drop * (rng.random(shape_seed) < d.collapse)
        run = rng.normal(0, d.run_sd, (sims, d.seeds, d.runs, 1)) if d.runs > 1 else 0.0
        rbi = rng.normal(0, d.rbi_sd, (sims, 1, 1, d.units)) if d.rbi_sd > 0 else 0.0
        out.append(task_level + shift + base + seed + run + item + rbi)
    return out


def _mining(logit: np.ndarray, rng: np.random.Generator, gold: np.ndarray) -> np.ndarray:
    g = np.broadcast_to(gold, logit.shape)
    correct = rng.binomial(g, _logistic(logit))
    wrong = rng.binomial(g - correct, 0.6)  # a missed link is often replaced by a wrong pair
    return np.stack([correct, correct + wrong, g], axis=-1).astype(np.float64)


def _sentiment(logit: np.ndarray, rng: np.random.Generator, gold: np.ndarray, labels: int = 3) -> np.ndarray:
    right = rng.random(logit.shape) < _logistic(logit)
    other = (gold + rng.integers(1, labels, size=logit.shape)) % labels
    g = np.broadcast_to(gold, logit.shape)
    pred = np.where(right, g, other)
    eye = np.eye(labels)
    tp = eye[g] * (pred == g)[..., None]
    return np.concatenate([tp, eye[pred], eye[g]], axis=-1)


def _curation(logit: np.ndarray, rng: np.random.Generator, clean: np.ndarray) -> np.ndarray:
    # a clean pair is kept with the recipe's probability, a noisy one with its complement
    c = np.broadcast_to(clean, logit.shape)
    p = np.where(c, _logistic(logit), 1 - _logistic(logit))
    kept = rng.random(logit.shape) < p
    return np.stack([kept & c, kept], axis=-1).astype(np.float64)


def _nmt(logit: np.ndarray, rng: np.random.Generator, length: np.ndarray) -> np.ndarray:
    # per sentence: n-gram matches of a hypothesis as long as its reference, unigram precision from the
    # skill, higher orders as its powers (a crude but monotone BLEU)
    ln = np.broadcast_to(length, logit.shape)
    p1 = _logistic(logit)
    cols = []
    totals = []
    for n in range(1, 5):
        t = np.maximum(ln - n + 1, 0)
        totals.append(t)
        cols.append(rng.binomial(t, p1**n))
    # the columns of lem.nmt.bleu.COLUMNS: hypothesis and reference length, matches and totals for n = 1..4
    return np.stack([ln, ln, *cols, *totals], axis=-1).astype(np.float64)


STATISTICS = {
    "mining": stats.f1_stat,
    "sentiment": stats.macro_f1_stat,
    "curation": stats.ratio_stat,
}
# logit level of each task's skill (mining F1 about 0.3, sentiment accuracy about 0.6, curation about 0.7,
# NMT unigram precision about 0.5)
LEVEL = {"mining": -0.6, "sentiment": 0.4, "curation": 0.85, "nmt": 0.0}


def simulate(
    task: str, design: Design, sims: int, rng: np.random.Generator, delta: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """Two recipes' per-item rows (sims, seeds, runs, units, stats): recipe a's skill is b's + `delta`
    (logit units)."""
    if task not in LEVEL:
        raise ValueError(f"simulate: task {task!r}: expected one of {sorted(LEVEL)}")
    la, lb = _skills(LEVEL[task], design, sims, rng, delta)
    if task == "mining":
        gold = 1 + rng.poisson(5, size=(sims, 1, 1, design.units))
        return _mining(la, rng, gold), _mining(lb, rng, gold)
    if task == "sentiment":
        gold = rng.integers(0, 3, size=(sims, 1, 1, design.units))
        return _sentiment(la, rng, gold), _sentiment(lb, rng, gold)
    if task == "curation":
        clean = rng.random((sims, 1, 1, design.units)) < 0.5
        return _curation(la, rng, clean), _curation(lb, rng, clean)
    length = 5 + rng.poisson(10, size=(sims, 1, 1, design.units))
    return _nmt(la, rng, length), _nmt(lb, rng, length)
