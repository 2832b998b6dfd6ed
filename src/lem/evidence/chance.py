"""Chance levels that need no stage: what a classification's and a curation ranking's metrics score when the
system knows nothing, to show next to their values (mining's, which depend on its candidate structure and
margins, are `lem.mine.chance`'s).

Sentiment: the best input-independent classifiers. Accuracy: always the majority label (max_c p_c).
Macro-F1 over K labels: a random classifier drawing label c with probability q_c has expected F1_c =
2 p_c q_c / (p_c + q_c), whose mean over labels is concave in q and maximal at q = p (the label prior):
sum_c p_c / K = 1 / K. Curation: a random ranking keeps clean pairs at the clean share, in any top share
(the hypergeometric mean), and its expected average precision is (H_N + (R - 1)/(N - 1) (N - H_N)) / N for R
clean among N (H_N the N-th harmonic number).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from lem.evidence.stats import macro_f1_counts, macro_f1_stat

# ---------------------------------------------------------------- classification (sentiment)


def _label_shares(gold: Sequence[str], labels: Sequence[str] | None) -> tuple[list[str], np.ndarray]:
    if len(gold) == 0:
        raise ValueError("classification chance: no gold labels")
    names = list(labels) if labels is not None else sorted(set(gold))
    unknown = sorted(set(gold) - set(names))
    if unknown:
        raise ValueError(f"classification chance: gold labels {unknown} are not among the labels {names}")
    counts = np.array([sum(1 for g in gold if g == c) for c in names], np.float64)
    return names, counts / counts.sum()


def classification_chance(gold: Sequence[str], labels: Sequence[str] | None = None) -> dict[str, Any]:
    """Chance accuracy and macro-F1 of the test labels `gold` (macro over `labels`, default the labels seen;
    give the label set the report's macro-F1 averages over, e.g. the train split's).

    Returns {"accuracy": the majority label's share (always predicting it), "macro_f1": 1 / K (a classifier
    drawing labels at the test prior; the best input-independent one, module docstring),
    "accuracy_prior_random": sum p_c^2, "macro_f1_majority": F1 of always-majority / K,
    "macro_f1_uniform": uniform random guessing, "majority_label", "shares", "method"}.
    """
    names, p = _label_shares(gold, labels)
    k = len(names)
    top = int(np.argmax(p))
    uniform = np.divide(2 * p / k, p + 1 / k)
    return {
        "accuracy": float(p[top]),
        "macro_f1": 1.0 / k,
        "accuracy_prior_random": float((p**2).sum()),
        "macro_f1_majority": float(2 * p[top] / (1 + p[top]) / k),
        "macro_f1_uniform": float(uniform.mean()),
        "majority_label": names[top],
        "shares": {c: float(s) for c, s in zip(names, p, strict=True)},
        "method": (
            "analytic: accuracy of always the majority label; expected macro-F1 of labels drawn at the test "
            "prior (= 1/K, the best input-independent classifier)"
        ),
    }


def classification_chance_permutation(
    gold: Sequence[Any],
    pred: Sequence[Any],
    labels: Sequence[Any] | None = None,
    n: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """Chance of a given system's predictions: accuracy and macro-F1 (over `labels`, default those seen in
    gold or pred) of its predictions shuffled across the test examples, `n` times (its label distribution
    kept, the link to the input lost). Returns {"accuracy", "macro_f1" (means), "sd": {...}, "method"}."""
    if len(gold) != len(pred) or len(gold) == 0:
        raise ValueError(f"classification chance: {len(gold)} gold and {len(pred)} predicted labels")
    names = list(labels) if labels is not None else sorted(set(gold) | set(pred), key=str)
    index = {c: i for i, c in enumerate(names)}
    try:
        g = np.array([index[c] for c in gold])
        p = np.array([index[c] for c in pred])
    except KeyError as err:
        raise ValueError(f"classification chance: label {err.args[0]!r} is not among {names}") from None
    rng = np.random.default_rng(seed)
    perms = np.stack([rng.permutation(len(p)) for _ in range(n)])
    pp = p[perms]  # (n, examples)
    acc = (pp == g[None]).mean(axis=1)
    k = len(names)
    sums = np.stack([macro_f1_counts(g, row, k).sum(axis=0) for row in pp])
    f1 = macro_f1_stat(sums)
    return {
        "accuracy": float(acc.mean()),
        "macro_f1": float(f1.mean()),
        "sd": {"accuracy": float(acc.std()), "macro_f1": float(f1.std())},
        "n_permutations": n,
        "seed": seed,
        "method": "permutation: the system's predictions shuffled across test examples",
    }


# ---------------------------------------------------------------- curation


def curation_chance(clean: Sequence[bool], keep_fractions: Sequence[float] = (0.25, 0.5)) -> dict[str, Any]:
    """Chance of a curation ranking (`lem.curate.ranking_metrics`' keys): a uniformly random ranking keeps
    clean pairs at the clean share in any top share (`precision_at_<f>`), and its expected average
    precision is (H_N + (R-1)/(N-1) (N - H_N)) / N for R clean pairs among N (exact)."""
    c = np.asarray(clean, bool)
    if c.ndim != 1 or len(c) == 0:
        raise ValueError("curation chance: expected a non-empty list of clean/noisy flags")
    big_n, r = len(c), int(c.sum())
    share = r / big_n
    out: dict[str, Any] = {f"precision_at_{f:g}": share for f in keep_fractions}
    harmonic = float((1.0 / np.arange(1, big_n + 1)).sum())
    if r == 0:
        ap = 0.0
    elif big_n == 1:
        ap = 1.0
    else:
        ap = (harmonic + (r - 1) / (big_n - 1) * (big_n - harmonic)) / big_n
    out.update(
        average_precision=ap,
        clean_share=share,
        method="analytic: a uniformly random ranking (precision = clean share; exact expected average precision)",
    )
    return out
