"""Numbers a reviewer accepts: spread over seeds, paired significance tests, and Holm's correction.

- `mean_interval`: mean and t-based 95 % interval of one metric over seeds.
- `paired_bootstrap`: paired bootstrap over *units* (documents, for mining) of two systems, each unit
  carrying a sufficient statistic (e.g. tp, predictions, gold counts of P/R/F1, summed over seeds); the
  metric is computed from the column sums (pooled, as `lem.mine.prf` pools), so resampling documents
  keeps each document's sentences together.
- `approximate_randomisation`: paired approximate randomisation over examples (sentiment, curation): under
  the null the two systems' outcomes on an example are exchangeable, so each example's rows are swapped
  with probability 1/2.
- `seed_paired_test`: a paired t-test over pre-training seeds of per-seed scores. It holds the test set
  fixed (every seed scores the same items, so a recipe-by-item part shared by every seed is never seen) and
  grows more liberal as seeds are added; the report's comparisons use the two-level test over seeds and items
  instead (`lem.evidence.crossed`). It stays for contrast (bench/stats_calibration.py prints both).
- `holm`: Holm-Bonferroni adjusted p-values for the comparisons shown together.

The unit-level tests (`paired_bootstrap`, `approximate_randomisation`) treat each trained model as fixed: they
count test-set noise only, so applied to seeds pooled as one system they overstate significance when two
pre-trainings of one recipe differ (`bench/stats_calibration.py`: false-positive rate 0.40 at a seed
standard deviation of 0.04 F1). They remain for comparing two fixed models on one test set.

Both tests take per-unit rows of numbers whose column sums determine the metric, and a vectorised
`statistic(sums) -> values` over the last axis; `*_counts` builders and `*_stat` statistics cover P/R/F1
of mining, accuracy and macro-F1 of classification and the precision of a kept set. Everything is
vectorised numpy and deterministic given the seed (10,000 resamples over 1,000 units take well under a
second). The difference reported is always statistic(a) - statistic(b).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

# Imported inside functions: scipy (planning, `lem plan --help` and the stages' --help import this module and
# need no scipy)

Statistic = Callable[[np.ndarray], np.ndarray]
_CHUNK_CELLS = 4_000_000  # resamples x units per chunk (bounds memory at ~32 MB of float64)


# ---------------------------------------------------------------- spread over seeds


def mean_interval(values: Sequence[float], confidence: float = 0.95) -> dict[str, Any]:
    """Mean, sample standard deviation and the t-based `confidence` interval of the mean of `values`
    (one per seed): mean +- t_{n-1, (1+c)/2} * sd / sqrt(n).

    Returns {"n", "mean", "sd", "low", "high", "confidence"}. With one value there is no spread to
    estimate: sd, low and high are None (not (v, v), which would claim a certainty the data lack).
    """
    from scipy.stats import t as student_t

    if not 0 < confidence < 1:
        raise ValueError(f"mean_interval: confidence={confidence!r}: expected a share in (0, 1)")
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    if len(v) == 0:
        raise ValueError("mean_interval: no values (expected one per seed)")
    if not np.isfinite(v).all():
        raise ValueError(f"mean_interval: values must be finite, got {v.tolist()}")
    mean = float(v.mean())
    if len(v) == 1:
        return {"n": 1, "mean": mean, "sd": None, "low": None, "high": None, "confidence": confidence}
    sd = float(v.std(ddof=1))
    half = float(student_t.ppf((1 + confidence) / 2, len(v) - 1)) * sd / math.sqrt(len(v))
    return {
        "n": len(v),
        "mean": mean,
        "sd": sd,
        "low": mean - half,
        "high": mean + half,
        "confidence": confidence,
    }


# ---------------------------------------------------------------- sufficient statistics


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, 0 where den is 0 (as `lem.mine.prf` and sklearn's zero_division=0)."""
    num, den = np.asarray(num, np.float64), np.asarray(den, np.float64)
    return np.divide(num, den, out=np.zeros(np.broadcast(num, den).shape), where=den != 0)


def precision_stat(sums: np.ndarray) -> np.ndarray:
    """Precision from summed (n_correct, n_pred, n_gold) rows: correct / predicted."""
    return _ratio(sums[..., 0], sums[..., 1])


def recall_stat(sums: np.ndarray) -> np.ndarray:
    """Recall from summed (n_correct, n_pred, n_gold) rows: correct / gold."""
    return _ratio(sums[..., 0], sums[..., 2])


def f1_stat(sums: np.ndarray) -> np.ndarray:
    """F1 from summed (n_correct, n_pred, n_gold) rows: 2 correct / (predicted + gold), the harmonic mean of
    pooled precision and recall (0 when both are 0)."""
    return _ratio(2 * sums[..., 0], sums[..., 1] + sums[..., 2])


PRF_STATS: dict[str, Statistic] = {"precision": precision_stat, "recall": recall_stat, "f1": f1_stat}


def prf_counts(n_correct: float, n_pred: float, n_gold: float) -> dict[str, float]:
    """Precision, recall and F1 of one set of counts: the one definition of P/R/F1 (mined pairs against
    gold links, `lem.mine.prf`; their chance level and ceiling, `lem.mine.chance`), the statistics above
    applied to a single row."""
    sums = np.array([n_correct, n_pred, n_gold], np.float64)
    return {name: float(stat(sums)) for name, stat in PRF_STATS.items()}


def accuracy_counts(gold: Sequence[Any], pred: Sequence[Any]) -> np.ndarray:
    """Per-example rows (correct, 1) whose sums give accuracy through `ratio_stat`."""
    g, p = np.asarray(gold), np.asarray(pred)
    if g.shape != p.shape or g.ndim != 1:
        raise ValueError(
            f"accuracy_counts: gold and pred must be 1-d of one length, got {g.shape} and {p.shape}"
        )
    return np.stack([(g == p).astype(np.float64), np.ones(len(g))], axis=1)


def ratio_stat(sums: np.ndarray) -> np.ndarray:
    """Column 0 over column 1 of the sums: accuracy from `accuracy_counts`, the precision of a kept set from
    `kept_precision_counts` (0 when column 1 sums to 0)."""
    return _ratio(sums[..., 0], sums[..., 1])


def kept_precision_counts(kept: Sequence[bool], clean: Sequence[bool]) -> np.ndarray:
    """Per-pair rows (kept and clean, kept) of a curation ranking's kept set: `ratio_stat` of their sums is
    the precision of clean pairs among the kept ones."""
    k, c = np.asarray(kept, bool), np.asarray(clean, bool)
    if k.shape != c.shape or k.ndim != 1:
        raise ValueError(
            f"kept_precision_counts: kept and clean must be 1-d of one length, got {k.shape}, {c.shape}"
        )
    return np.stack([(k & c).astype(np.float64), k.astype(np.float64)], axis=1)


def macro_f1_counts(gold: Sequence[int], pred: Sequence[int], n_labels: int) -> np.ndarray:
    """Per-example rows of 3 * n_labels indicators: [pred == gold == c]_c, [pred == c]_c, [gold == c]_c.
    `macro_f1_stat` of their sums is macro-F1 over the n_labels labels (a label with no gold and no
    prediction counts 0, as sklearn's f1_score(labels=..., zero_division=0) in lem.sentiment)."""
    g, p = np.asarray(gold), np.asarray(pred)
    if g.shape != p.shape or g.ndim != 1:
        raise ValueError(
            f"macro_f1_counts: gold and pred must be 1-d of one length, got {g.shape} and {p.shape}"
        )
    for name, a in (("gold", g), ("pred", p)):
        if len(a) and (not np.issubdtype(a.dtype, np.integer) or a.min() < 0 or a.max() >= n_labels):
            raise ValueError(f"macro_f1_counts: {name} must hold label indices 0..{n_labels - 1}")
    eye = np.eye(n_labels)
    tp = eye[g] * (g == p)[:, None]
    return np.concatenate([tp, eye[p], eye[g]], axis=1)


def macro_f1_stat(sums: np.ndarray) -> np.ndarray:
    """Macro-F1 from summed `macro_f1_counts` rows: the mean over labels of 2 tp_c / (pred_c + gold_c)."""
    k = sums.shape[-1] // 3
    if 3 * k != sums.shape[-1] or k == 0:
        raise ValueError(f"macro_f1_stat: expected 3 * n_labels columns, got {sums.shape[-1]}")
    return _ratio(2 * sums[..., :k], sums[..., k : 2 * k] + sums[..., 2 * k :]).mean(axis=-1)


# ---------------------------------------------------------------- paired tests


def _units(rows: Any, name: str) -> np.ndarray:
    """(units, stats) float64 from (units,), (units, stats) or (seeds, units, stats) rows (seeds summed)."""
    a = np.asarray(rows, dtype=np.float64)
    if a.ndim == 1:
        a = a[:, None]
    elif a.ndim == 3:
        a = a.sum(axis=0)
    elif a.ndim != 2:
        raise ValueError(
            f"{name}: expected (units,), (units, stats) or (seeds, units, stats) rows, got {a.shape}"
        )
    if not np.isfinite(a).all():
        raise ValueError(f"{name}: rows must be finite numbers")
    return a


def _pair(a: Any, b: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
    ga, gb = _units(a, name), _units(b, name)
    if ga.shape != gb.shape:
        raise ValueError(
            f"{name}: the two systems' rows differ in shape, {ga.shape} vs {gb.shape} (expected the same "
            "units, in the same order, with the same statistics)"
        )
    if len(ga) == 0:
        raise ValueError(f"{name}: no units to resample")
    return ga, gb


def _observed(statistic: Statistic, ga: np.ndarray, gb: np.ndarray) -> tuple[float, float]:
    sa, sb = np.asarray(statistic(ga.sum(axis=0)[None])), np.asarray(statistic(gb.sum(axis=0)[None]))
    if sa.shape != (1,) or sb.shape != (1,):
        raise ValueError(
            "statistic must map sums of shape (resamples, stats) to one value per resample, got shape "
            f"{sa.shape} for one resample"
        )
    return float(sa[0]), float(sb[0])


def _check_n(n: int, name: str) -> None:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"{name}: n={n!r}: expected a number of resamples >= 1")


def paired_bootstrap(
    groups_a: Any,
    groups_b: Any,
    statistic: Statistic = f1_stat,
    n: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """Paired bootstrap over units (documents) of system a against system b.

    `groups_a`, `groups_b`: per-unit sufficient statistics, shape (units, stats), or (seeds, units, stats)
    summed over seeds (each unit then pools every seed's counts, and is resampled as one); e.g. per document
    (n_correct, n_pred, n_gold) with `f1_stat`. Each of `n` resamples draws units with replacement, the same
    units for both systems, and computes statistic(column sums) of each.

    Returns {"a", "b", "diff" (= a - b, observed), "low", "high" (the percentile `confidence` interval of the
    resampled differences), "p" (two-sided: the share of resampled differences at least |diff| away from
    the observed one, the bootstrap's null being the resampled differences shifted to mean 0; (1 + count) /
    (1 + n), so never 0), "n_units", "n_resamples", "seed", "method"}.
    """
    name = "paired_bootstrap"
    _check_n(n, name)
    if not 0 < confidence < 1:
        raise ValueError(f"{name}: confidence={confidence!r}: expected a share in (0, 1)")
    ga, gb = _pair(groups_a, groups_b, name)
    obs_a, obs_b = _observed(statistic, ga, gb)
    diff = obs_a - obs_b
    units = len(ga)
    both = np.concatenate([ga, gb], axis=1)
    k = ga.shape[1]
    rng = np.random.default_rng(seed)
    diffs = np.empty(n)
    step = max(1, _CHUNK_CELLS // units)
    for r0 in range(0, n, step):
        r = min(step, n - r0)
        idx = rng.integers(0, units, size=(r, units))
        # weights[i, u] = how often unit u was drawn in resample i (one bincount over all resamples)
        w = np.bincount((idx + (np.arange(r) * units)[:, None]).ravel(), minlength=r * units)
        sums = w.reshape(r, units).astype(np.float64) @ both
        diffs[r0 : r0 + r] = statistic(sums[:, :k]) - statistic(sums[:, k:])
    alpha = 1 - confidence
    low, high = np.quantile(diffs, [alpha / 2, 1 - alpha / 2])
    extreme = int(np.count_nonzero(np.abs(diffs - diff) >= abs(diff) - 1e-12))
    return {
        "a": obs_a,
        "b": obs_b,
        "diff": diff,
        "low": float(low),
        "high": float(high),
        "confidence": confidence,
        "p": (1 + extreme) / (1 + n),
        "n_units": units,
        "n_resamples": int(n),
        "seed": seed,
        "method": "paired bootstrap over units, percentile interval, two-sided shifted p",
    }


def approximate_randomisation(
    a: Any,
    b: Any,
    statistic: Statistic = ratio_stat,
    n: int = 10_000,
    seed: int = 0,
) -> dict[str, Any]:
    """Paired approximate randomisation (permutation) test over examples of system a against system b.

    `a`, `b`: per-example outcome rows, shape (examples,), (examples, stats) or (seeds, examples, stats)
    summed over seeds (the example is the unit: its rows from every seed move together); e.g.
    `accuracy_counts` or `kept_precision_counts` with `ratio_stat`, `macro_f1_counts` with `macro_f1_stat`.
    Each of `n` rounds swaps every example's a and b rows with probability 1/2 and recomputes
    statistic(a sums) - statistic(b sums).

    Returns {"a", "b", "diff" (= a - b), "p" (two-sided: (1 + rounds with |diff*| >= |diff|) / (1 + n)),
    "n_units", "n_resamples", "seed", "method"}.
    """
    name = "approximate_randomisation"
    _check_n(n, name)
    ga, gb = _pair(a, b, name)
    obs_a, obs_b = _observed(statistic, ga, gb)
    diff = obs_a - obs_b
    units = len(ga)
    sa, sb, delta = ga.sum(axis=0), gb.sum(axis=0), gb - ga
    rng = np.random.default_rng(seed)
    diffs = np.empty(n)
    step = max(1, _CHUNK_CELLS // units)
    for r0 in range(0, n, step):
        r = min(step, n - r0)
        swap = rng.integers(0, 2, size=(r, units), dtype=np.uint8).astype(np.float64)
        moved = swap @ delta  # what swapped examples move from a's sums to b's
        diffs[r0 : r0 + r] = statistic(sa + moved) - statistic(sb - moved)
    extreme = int(np.count_nonzero(np.abs(diffs) >= abs(diff) - 1e-12))
    return {
        "a": obs_a,
        "b": obs_b,
        "diff": diff,
        "p": (1 + extreme) / (1 + n),
        "n_units": units,
        "n_resamples": int(n),
        "seed": seed,
        "method": "paired approximate randomisation over examples, two-sided",
    }


def seed_paired_p(diffs: Any) -> np.ndarray:
    """Two-sided p of the paired t-test over the last axis of per-seed differences (vectorised over the
    others): t = mean / (sd / sqrt(n)) on n - 1 degrees of freedom. NaN with fewer than two seeds or no
    spread (unless every difference is 0: p 1)."""
    from scipy.stats import t as student_t

    d = np.asarray(diffs, dtype=np.float64)
    n = d.shape[-1]
    if n < 2:
        return np.full(d.shape[:-1], np.nan)
    mean, sd = d.mean(axis=-1), d.std(axis=-1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = 2 * student_t.sf(np.abs(mean) / (sd / math.sqrt(n)), n - 1)
    return np.where(sd > 0, p, np.where(mean == 0, 1.0, np.nan))


def seed_paired_test(
    a: Mapping[str, float], b: Mapping[str, float], confidence: float = 0.95
) -> dict[str, Any]:
    """Paired t-test over pre-training seeds of two recipes' per-seed scores.

    `a`, `b`: seed -> the score of the model trained with that seed (each score computed from that model's
    own test items, e.g. F1 from its per-document counts). Seeds are paired: in this pipeline seed s of
    every variant continues the same base model, so d_s = a_s - b_s removes the base model's share of the
    seed variation. Only the seeds both have are used. With n paired seeds, t = mean(d) / (sd(d) / sqrt(n))
    on n - 1 degrees of freedom; the `confidence` interval of the mean difference is mean(d) +- t_crit
    sd(d) / sqrt(n). Each d_s carries both sources of variation, the pre-training draw and the test-item
    noise of that draw's evaluation, so the test counts both; it is exact when d_s is normal and
    conservative-to-exact for the near-normal F1 differences of many test items (calibration:
    `bench/stats_calibration.py`).

    Method: the paired comparison over replicates that Clark, Dyer, Lavie & Smith (ACL 2011, "Better
    hypothesis testing for statistical machine translation: controlling for optimizer instability")
    require of recipes trained several times, in its simplest parametric form (Student's paired t over
    replicate scores; Dror et al., ACL 2018, "The Hitchhiker's Guide to Testing Statistical Significance in
    NLP", section 3, for its assumptions); Bouthillier et al. (MLSys 2021) for why the seed, not the test
    item, is the unit to resample when recipes are compared.

    Returns {"a", "b" (means over the paired seeds), "sd_a", "sd_b" (their seed standard deviations),
    "diff" (= mean(a) - mean(b) = mean(d)), "sd_diff", "low", "high", "effect_size" (diff over the pooled
    seed standard deviation sqrt((sd_a^2 + sd_b^2) / 2), Cohen's d of the seed distributions), "p"
    (two-sided), "n_seeds", "seeds", "diffs" (per seed), "confidence", "method"}. With fewer than two
    paired seeds there is no spread to test against: sd_*, low, high, effect_size and p are NaN (no mark).
    """
    from scipy.stats import t as student_t

    if not 0 < confidence < 1:
        raise ValueError(f"seed_paired_test: confidence={confidence!r}: expected a share in (0, 1)")
    seeds = [s for s in a if s in b]
    va = np.asarray([a[s] for s in seeds], dtype=np.float64)
    vb = np.asarray([b[s] for s in seeds], dtype=np.float64)
    if not (np.isfinite(va).all() and np.isfinite(vb).all()):
        raise ValueError("seed_paired_test: per-seed scores must be finite")
    n = len(seeds)
    nan = float("nan")
    out: dict[str, Any] = {
        "a": float(va.mean()) if n else nan,
        "b": float(vb.mean()) if n else nan,
        "sd_a": nan,
        "sd_b": nan,
        "diff": float((va - vb).mean()) if n else nan,
        "sd_diff": nan,
        "low": nan,
        "high": nan,
        "effect_size": nan,
        "p": nan,
        "n_seeds": n,
        "seeds": [str(s) for s in seeds],
        "diffs": (va - vb).tolist(),
        "confidence": confidence,
        "method": "paired t-test over pre-training seeds of per-seed scores",
    }
    if n < 2:
        return out
    d = va - vb
    sd_a, sd_b, sd_d = (float(x.std(ddof=1)) for x in (va, vb, d))
    pooled = math.sqrt((sd_a**2 + sd_b**2) / 2)
    out.update(sd_a=sd_a, sd_b=sd_b, sd_diff=sd_d)
    out["effect_size"] = out["diff"] / pooled if pooled > 0 else nan
    if sd_d == 0:  # every seed differs by the same amount: nothing to scale the difference by
        out.update(low=out["diff"], high=out["diff"], p=float(seed_paired_p(d)))
        return out
    half = float(student_t.ppf((1 + confidence) / 2, n - 1)) * sd_d / math.sqrt(n)
    out.update(low=out["diff"] - half, high=out["diff"] + half, p=float(seed_paired_p(d)))
    return out


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the input order: with p sorted ascending, the i-th (1-based)
    adjusted value is max over j <= i of min(1, (m - j + 1) p_(j)). Reject at level alpha where the
    adjusted value is <= alpha; this controls the family-wise error over the m comparisons given."""
    p = np.asarray(list(pvalues), dtype=np.float64)
    if p.ndim != 1:
        raise ValueError(f"holm: expected a flat list of p-values, got shape {p.shape}")
    if np.isnan(p).any() or (p < 0).any() or (p > 1).any():
        raise ValueError(f"holm: p-values must lie in [0, 1], got {p.tolist()}")
    m = len(p)
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(scaled) if m else scaled
    return adjusted.tolist()
