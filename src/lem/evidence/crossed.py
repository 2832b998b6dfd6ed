"""Two-level inference for comparing two training recipes: pre-training seeds AND test items both vary.

Every seed of a run scores the *same* test items, so a difference between two recipes has three parts:
a seed part (two draws of a recipe differ), an item part shared by every seed (the recipe-by-item
interaction: some documents suit one recipe) and a residual (seed-by-item noise). A test over seeds alone
never sees the shared item part and grows more liberal as seeds are added; a test over items alone
treats each trained model as fixed. This module counts all three, as a crossed random-effects design
(seeds x items, one observation per cell) analysed by its mean squares:

1. Each run's score is a statistic of the column sums of its per-item rows (F1 of per-document counts,
   macro-F1 of per-example indicators, BLEU of per-sentence n-gram counts...). It is linearised over the
   items by the jackknife: `pseudo_values` gives per-item values whose mean is exactly the run's score and
   whose sample variance over n is the jackknife variance of that score (Efron & Stein 1981).
2. Runs of one pre-training seed (e.g. fine-tuning seeds of a downstream task) are averaged: their spread
   is nested in the seed and reaches the test through the seed mean square.
3. For the S x I matrix of paired differences d[s, i] (seed s of both recipes, item i), the two-way
   mean squares MS_seed (S - 1 df), MS_item (I - 1 df) and MS_res ((S - 1)(I - 1) df) estimate
   var(mean d) = (MS_seed + MS_item - MS_res) / (S I), unbiased for s2_seed / S + s2_item / I +
   s2_res / (S I). Neither part is let below what the residual (item noise independent across seeds)
   implies: MS_seed and MS_item are floored at MS_res, so three seeds that agree by chance do not make a
   seed part of zero. The degrees of freedom are Satterthwaite's (1946) for that sum, with the seed term
   keeping its S - 1 degrees of freedom even when floored, and S - 1 alone where the seed term is at least
   half of the sum (Satterthwaite's approximation is liberal there with few seeds): the conservative choices,
   measured by the bench.
4. t = mean d / se on those degrees of freedom: two-sided p, the confidence interval, and the two
   one-sided tests (TOST, Lakens 2017) against a declared equivalence margin. A table with no spread at all
   (every cell the same difference) is tested exactly: "identical on every seed and item" (p 1, TOST p 0)
   or "the same difference on every seed and item" (p 0), never NaN.
5. The intervals a family's verdicts are read from (`holm_step_alpha`, `t_interval`, `tost_interval`): the
   t-interval, from the same t and degrees of freedom, at the level of the Holm step that decided the row,
   which excludes 0 exactly when Holm rejects; and the TOST interval at 1 - 2 x that step's alpha, inside
   +-margin exactly when TOST's Holm rejects.

This is the crossed design the field's guidance asks for (Clark et al., ACL 2011: replicates of every
system; the random-effects treatment of items of Clark, H. H. 1973, "The language-as-fixed-effect
fallacy"). Calibration under skewed, collapsed and hub-style seeds, shared recipe-by-item parts and
Holm's step: `bench/stats_calibration.py`.

When seeds are paired (seed s of both recipes continues base model s, the embedded default) the pairing
removes the base model's part; at paper scale every seed continues one hub model and the pairing by seed
number is arbitrary, which leaves the test valid (d_s then carries both recipes' seed variance).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from lem.evidence.stats import Statistic

# Imported inside functions: scipy (`lem plan --help` and `lem report --help` import this module and need no
# scipy)

METHOD = "two-level t (seeds x items, jackknife-linearised, Satterthwaite df)"


def pseudo_values(rows: np.ndarray, statistic: Statistic) -> tuple[np.ndarray, np.ndarray]:
    """The run's score and its per-item jackknife pseudo-values, centred on the score.

    `rows`: (..., units, stats) per-item sufficient statistics whose column sums give the score through
    `statistic` (vectorised over leading axes). Returns (score (...,), y (..., units)) with mean(y) = score
    exactly and var(y) / units the jackknife variance of the score. With one unit there is no item
    variation: y = score."""
    r = np.asarray(rows, dtype=np.float64)
    if r.ndim < 2:
        raise ValueError(f"pseudo_values: expected (..., units, stats) rows, got shape {r.shape}")
    units = r.shape[-2]
    total = r.sum(axis=-2)
    score = np.asarray(statistic(total), dtype=np.float64)
    if units == 1:
        return score, score[..., None].copy()
    loo = np.asarray(statistic(total[..., None, :] - r), dtype=np.float64)
    y = score[..., None] + (units - 1) * (loo.mean(axis=-1, keepdims=True) - loo)
    return score, y


def crossed_moments(d: np.ndarray) -> dict[str, np.ndarray]:
    """Mean squares of an (..., S, I) matrix of paired differences (vectorised over leading axes) and the
    floored variance of its grand mean with Satterthwaite's degrees of freedom (see the module's doc)."""
    d = np.asarray(d, dtype=np.float64)
    s, i = d.shape[-2:]
    mean = d.mean(axis=(-2, -1))
    seed_means = d.mean(axis=-1)
    item_means = d.mean(axis=-2)
    nan = np.full(mean.shape, np.nan)
    ms_seed = i * ((seed_means - mean[..., None]) ** 2).sum(axis=-1) / (s - 1) if s > 1 else nan
    if i > 1:
        ms_item = s * ((item_means - mean[..., None]) ** 2).sum(axis=-1) / (i - 1)
        resid = d - seed_means[..., None] - item_means[..., None, :] + mean[..., None, None]
        ms_res = (resid**2).sum(axis=(-2, -1)) / ((s - 1) * (i - 1)) if s > 1 else nan
    else:
        ms_item, ms_res = np.zeros(mean.shape), np.zeros(mean.shape)
    a = np.maximum(ms_seed, ms_res)
    b = np.maximum(ms_item, ms_res)
    c = ms_res
    total = a + b - c  # = S I var(mean d)
    df_s, df_i, df_r = s - 1, max(i - 1, 1), max((s - 1) * (i - 1), 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        den = a**2 / df_s + (b**2 / df_i + c**2 / df_r if i > 1 else 0.0) if s > 1 else nan
        # no variation at all (every item of every seed differs alike, e.g. two runs predicting one class):
        # the seed term's degrees of freedom, so that t_test says p 1 for a zero difference
        df = np.where(den > 0, total**2 / den, float(df_s))
    if i == 1 and s > 1:
        df = np.full(mean.shape, float(df_s))
    elif s > 1:
        # where the seed term is at least half of the variance, its own S - 1 degrees of freedom: with few
        # seeds Satterthwaite's sum is liberal there (bench/stats_calibration.py, NMT with hub seeds: 0.074)
        with np.errstate(divide="ignore", invalid="ignore"):
            df = np.where(a >= 0.5 * total, float(df_s), df)
    return {
        "mean": mean,
        "seed_means": seed_means,
        "ms_seed": ms_seed,
        "ms_item": ms_item,
        "ms_res": ms_res,
        "var": total / (s * i),
        "df": df,
        "seeds": s,
        "items": i,
    }


def t_test(mean: Any, var: Any, df: Any, margin: float = 0.0) -> dict[str, np.ndarray]:
    """Two-sided p of mean / sqrt(var) on df degrees of freedom, and the TOST p against +-margin (the larger
    of the two one-sided p's; NaN without a margin). Vectorised. A zero variance gives p 0 (or 1 when the
    mean is 0 too)."""
    from scipy.stats import t as student_t

    mean, var, df = (np.asarray(x, dtype=np.float64) for x in (mean, var, df))
    se = np.sqrt(var)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / se
        p = 2 * student_t.sf(np.abs(t), df)
        p = np.where(se > 0, p, np.where(mean == 0, 1.0, 0.0))
        if margin > 0:
            lower = student_t.sf((mean + margin) / se, df)  # H0: delta <= -margin
            upper = student_t.cdf((mean - margin) / se, df)  # H0: delta >= +margin
            tost = np.where(se > 0, np.maximum(lower, upper), np.where(np.abs(mean) < margin, 0.0, 1.0))
        else:
            tost = np.full(mean.shape, np.nan)
    p = np.where(np.isfinite(df), p, np.nan)
    tost = np.where(np.isfinite(df), tost, np.nan)
    return {"t": t, "p": p, "p_tost": tost, "se": se}


def holm_step_alpha(p: Any, p_holm: Any, alpha: float) -> np.ndarray:
    """The level of the Holm step that decided each of a family's comparisons (vectorised over leading axes:
    one family per last axis): with the p's sorted ascending, a rejected comparison (`p_holm` < `alpha`) of
    rank j (1-based) of m was decided at alpha / (m - j + 1); every other one at the step where Holm stopped,
    alpha / (m - k), k the number rejected. A two-sided interval at 1 - that level from the test's own t and
    degrees of freedom excludes 0 exactly when Holm rejects: p_(j) < alpha / (m - j + 1) at every step up to
    a rejected row's, and p >= p_(k+1) >= alpha / (m - k) for the rest. A NaN p (untested) counts as 1, as in
    the family's Holm."""
    p = np.nan_to_num(np.asarray(p, dtype=np.float64), nan=1.0)
    rejected = np.asarray(p_holm, dtype=np.float64) < alpha
    m = p.shape[-1]
    rank = np.argsort(np.argsort(p, axis=-1, kind="stable"), axis=-1, kind="stable")  # 0-based
    stopped = alpha / (m - rejected.sum(axis=-1, keepdims=True)).clip(min=1)
    return np.where(rejected, alpha / (m - rank), stopped)


def t_interval(diff: Any, se: Any, df: Any, alpha: Any) -> tuple[np.ndarray, np.ndarray]:
    """The two-sided 1 - `alpha` t-interval diff +- t_{1-alpha/2, df} se (vectorised): it excludes 0 exactly
    when the two-sided p of diff / se on df is below alpha; a zero se gives [diff, diff]."""
    from scipy.stats import t as student_t

    diff, se, df, alpha = (np.asarray(x, dtype=np.float64) for x in (diff, se, df, alpha))
    half = student_t.ppf(1 - alpha / 2, df) * se
    return diff - half, diff + half


def tost_interval(diff: Any, se: Any, df: Any, alpha: Any) -> tuple[np.ndarray, np.ndarray]:
    """The 1 - 2 `alpha` interval diff +- t_{1-alpha, df} se that TOST at `alpha` reads (vectorised): it lies
    strictly inside +-margin exactly when both one-sided tests reject at alpha (TOST p < alpha)."""
    return t_interval(diff, se, df, 2 * np.asarray(alpha, dtype=np.float64))


def power_at(delta: float, se: float, df: float, alpha: float) -> float:
    """Power of the two-sided t-test at level `alpha` on `df` degrees of freedom to detect a true difference
    `delta` whose estimate has standard error `se`: P(|T'| > t_crit), T' = (Z + ncp) / sqrt(V / df), V
    chi-square on df, ncp = |delta| / se: the non-central t integrated over its chi-square part (scipy's nct
    loses precision for few degrees of freedom and a large ncp; this does not)."""
    from scipy import integrate
    from scipy.special import gammaln, ndtr
    from scipy.stats import chi2
    from scipy.stats import t as student_t

    if not (math.isfinite(df) and df > 0 and math.isfinite(se)):
        return float("nan")
    if se <= 0:
        return 1.0 if delta != 0 else alpha
    crit = float(student_t.ppf(1 - alpha / 2, df))
    ncp = abs(delta) / se
    log_norm = -0.5 * df * math.log(2) - float(gammaln(df / 2))  # the chi-square density's constant

    def at(v: float) -> float:  # scipy.special's ufuncs: the stats distributions cost ~100x per call
        c = crit * math.sqrt(v / df)
        density = math.exp((df / 2 - 1) * math.log(v) - v / 2 + log_norm) if v > 0 else 0.0
        return (float(ndtr(ncp - c)) + float(ndtr(-ncp - c))) * density

    # split at the chi-square's bulk so that quad sees its mass for every df (1 to thousands)
    mid = float(chi2.ppf(0.5, df))
    value = sum(integrate.quad(at, lo, hi, limit=200)[0] for lo, hi in ((0, mid), (mid, np.inf)))
    return float(min(1.0, max(0.0, value)))


def minimum_detectable(se: float, df: float, alpha: float, power: float = 0.8) -> float:
    """The smallest true difference a two-sided t-test at level `alpha` on `df` degrees of freedom detects
    with probability `power` when its estimate has standard error `se`: the root of `power_at(delta) = power`
    (the exact non-central t power; the normal-shift shortcut (t_{1-alpha/2} + t_power) se understates it
    with few degrees of freedom: power 0.69-0.72 instead of 0.80 at 2 df)."""
    from scipy.optimize import brentq
    from scipy.stats import t as student_t

    if not (math.isfinite(se) and math.isfinite(df)) or df <= 0 or se < 0:
        return float("nan")
    if se == 0:
        return 0.0
    if not 0 < alpha < 1 or not alpha < power < 1:
        raise ValueError(
            f"minimum_detectable: expected 0 < alpha < power < 1, got alpha {alpha}, power {power}"
        )
    shortcut = float((student_t.ppf(1 - alpha / 2, df) + student_t.ppf(power, df)) * se)
    hi = shortcut
    while power_at(hi, se, df, alpha) < power:
        hi *= 2
    return float(brentq(lambda d: power_at(d, se, df, alpha) - power, 0.0, hi, xtol=1e-12 * se, rtol=1e-10))


def _per_seed(runs: Mapping[str, Sequence[np.ndarray]], statistic: Statistic) -> dict[str, tuple[float, Any]]:
    """seed -> (mean score over its runs, mean pseudo-values over its runs)."""
    out = {}
    for seed, rows in runs.items():
        scores, ys = zip(*(pseudo_values(r, statistic) for r in rows), strict=True)
        out[seed] = (float(np.mean(scores)), np.mean(np.stack(ys), axis=0))
    return out


def paired_item_differences(
    a: Mapping[str, Sequence[np.ndarray]], b: Mapping[str, Sequence[np.ndarray]], statistic: Statistic
) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """(paired seeds, a's per-seed scores, b's, the seeds x items table of pseudo-value differences) of two
    recipes' runs (see `two_level_test`); the table is empty (0 x 0) without a paired seed."""
    pa, pb = _per_seed(a, statistic), _per_seed(b, statistic)
    seeds = [s for s in pa if s in pb]
    sa = np.asarray([pa[s][0] for s in seeds], dtype=np.float64)
    sb = np.asarray([pb[s][0] for s in seeds], dtype=np.float64)
    if not (np.isfinite(sa).all() and np.isfinite(sb).all()):
        raise ValueError("two_level_test: per-seed scores must be finite")
    d = np.stack([pa[s][1] - pb[s][1] for s in seeds]) if seeds else np.zeros((0, 0))
    return seeds, sa, sb, d


def two_level_test(
    a: Mapping[str, Sequence[np.ndarray]],
    b: Mapping[str, Sequence[np.ndarray]],
    statistic: Statistic,
    margin: float = 0.0,
    confidence: float = 0.95,
    strata: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Compare recipe a with recipe b over their paired pre-training seeds and the shared test items.

    `a`, `b`: pre-training seed -> that seed's runs (one or more, e.g. fine-tuning seeds), each a (units,
    stats) array of per-item rows over the same units in the same order. Seeds both recipes have are paired.
    `strata`: each unit's stratum (a pooled news set's site), the items then resampled within their stratum
    (`stratified_moments`; `method` says so).

    Returns {"a", "b" (means of the per-seed scores), "sd_a", "sd_b" (their seed standard deviations),
    "diff", "se", "df", "low", "high" (the `confidence` interval, unadjusted), "p" (two-sided), "p_tost"
    (against `margin`), "d_av" (diff over the mean of the two seed s.d.'s), "d_z" (mean over s.d. of the
    per-seed differences), "sd_seed", "sd_item", "sd_res" (the variance parts' standard deviations: of the
    seed part, the shared item part and the residual, in score units), "spread" ("" where the differences
    vary; else why they do not: "identical on every seed and item", p 1 and TOST p 0, or "the same
    difference on every seed and item", p 0; se 0 and the interval [diff, diff] either way), "n_seeds",
    "n_units", "seeds", "scores_a", "scores_b", "diffs", "method"}. With fewer than two paired seeds nothing
    is tested (p, interval and effect sizes NaN)."""
    from scipy.stats import t as student_t

    if not 0 < confidence < 1:
        raise ValueError(f"two_level_test: confidence={confidence!r}: expected a share in (0, 1)")
    seeds, sa, sb, d = paired_item_differences(a, b, statistic)
    nan = float("nan")
    diffs = sa - sb
    out: dict[str, Any] = {
        "a": float(sa.mean()) if seeds else nan,
        "b": float(sb.mean()) if seeds else nan,
        "sd_a": nan,
        "sd_b": nan,
        "diff": float(diffs.mean()) if seeds else nan,
        "se": nan,
        "df": nan,
        "low": nan,
        "high": nan,
        "p": nan,
        "p_tost": nan,
        "d_av": nan,
        "d_z": nan,
        "sd_seed": nan,
        "sd_item": nan,
        "sd_res": nan,
        "spread": "",
        "n_seeds": len(seeds),
        "n_units": 0,
        "seeds": [str(s) for s in seeds],
        "scores_a": sa.tolist(),
        "scores_b": sb.tolist(),
        "diffs": diffs.tolist(),
        "method": METHOD,
    }
    if not seeds:
        return out
    out["n_units"] = int(d.shape[1])
    if len(seeds) < 2:
        return out
    m = crossed_moments(d) if strata is None else stratified_moments(d, strata)
    if m.get("strata"):
        out["method"] = f"{METHOD}, items within {m['strata']} strata"
    spread = no_spread(d)
    if spread == IDENTICAL:
        out["diff"] = 0.0  # not a rounding error's +-1e-17 beside p 1
    mean = 0.0 if spread == IDENTICAL else float(m["mean"])
    var = 0.0 if spread else max(0.0, float(m["var"]))  # never a rounding error's negative variance
    test = t_test(mean, var, m["df"], margin)
    se, df = float(test["se"]), float(m["df"])
    half = float(student_t.ppf((1 + confidence) / 2, df)) * se if math.isfinite(df) else nan
    sd_a, sd_b, sd_d = (float(x.std(ddof=1)) for x in (sa, sb, diffs))
    i = d.shape[1]
    res = float(m["ms_res"])
    out.update(
        sd_a=sd_a,
        sd_b=sd_b,
        se=se,
        df=df,
        low=out["diff"] - half,
        high=out["diff"] + half,
        p=float(test["p"]),
        p_tost=float(test["p_tost"]),
        d_av=out["diff"] / ((sd_a + sd_b) / 2) if sd_a + sd_b > 0 else nan,
        d_z=out["diff"] / sd_d if sd_d > 0 else nan,
        sd_seed=math.sqrt(max(0.0, float(m["ms_seed"]) - res) / i),
        sd_item=math.sqrt(max(0.0, float(m["ms_item"]) - res) / len(seeds)),
        sd_res=math.sqrt(res),
        spread=spread,
    )
    return out


IDENTICAL = "identical on every seed and item"
CONSTANT = "the same difference on every seed and item"


def no_spread(d: np.ndarray) -> str:
    """Why a seeds x items table of differences has no spread ("" where it has): every cell 0 (`IDENTICAL`)
    or every cell one nonzero value (`CONSTANT`), up to rounding (1e-12 of the largest cell, at least of 1)."""
    d = np.asarray(d, dtype=np.float64)
    if d.size == 0 or not np.isfinite(d).all():
        return ""
    tol = 1e-12 * max(1.0, float(np.abs(d).max()))
    if float(np.ptp(d)) > tol:
        return ""
    return IDENTICAL if float(np.abs(d).max()) <= tol else CONSTANT


def stratified_moments(d: np.ndarray, strata: Sequence[str]) -> dict[str, Any]:
    """`crossed_moments` with the items in fixed strata, `strata[i]` item i's (a pooled news set's sites:
    `lem.data.news.load_sites`): the item and residual mean squares are taken within strata, so that what
    sets one stratum's differences apart (one site suits a recipe better) is part of the estimate, pooled with
    the strata's item counts as weights, and no part of its noise. The design: d[s, i] = mu_h(i) + seed_s +
    (seed x stratum)_s,h(i) + item_i + residual, the H strata fixed, the rest random. MS_seed as there,
    MS_item = S sum_i (item mean_i - its stratum's mean)^2 / (I - H) and MS_res the residual within seed x
    stratum cells on (S - 1)(I - H) df: (MS_seed + MS_item - MS_res) / (S I) is unbiased for var(mean d) =
    s2_seed / S + sum_h w_h^2 s2_seed_x_stratum / S + s2_item / I + s2_res / (S I), w_h = I_h / I. The floors
    and degrees of freedom as there, with I - H and (S - 1)(I - H) for I - 1 and (S - 1)(I - 1). One stratum,
    or no item left to vary within a stratum (I - H < 1), is `crossed_moments`. Vectorised over leading axes
    of `d`; `strata` names the last axis's items."""
    d = np.asarray(d, dtype=np.float64)
    s, i = d.shape[-2:]
    labels = [str(x) for x in strata]
    if len(labels) != i:
        raise ValueError(f"stratified_moments: {len(labels)} strata for {i} items")
    names = {name: k for k, name in enumerate(dict.fromkeys(labels))}
    h = len(names)
    if h <= 1 or i - h < 1 or s < 2:
        return crossed_moments(d)
    code = np.asarray([names[x] for x in labels])
    onehot = np.zeros((i, h))
    onehot[np.arange(i), code] = 1.0
    size = onehot.sum(axis=0)
    mean = d.mean(axis=(-2, -1))
    seed_means = d.mean(axis=-1)
    item_means = d.mean(axis=-2)
    cell_means = (d @ onehot) / size  # (..., S, H): seed x stratum
    stratum_means = (item_means @ onehot) / size  # (..., H)
    ms_seed = i * ((seed_means - mean[..., None]) ** 2).sum(axis=-1) / (s - 1)
    ms_item = s * ((item_means - stratum_means[..., code]) ** 2).sum(axis=-1) / (i - h)
    resid = d - cell_means[..., code] - item_means[..., None, :] + stratum_means[..., None, code]
    ms_res = (resid**2).sum(axis=(-2, -1)) / ((s - 1) * (i - h))
    a, b, c = np.maximum(ms_seed, ms_res), np.maximum(ms_item, ms_res), ms_res
    total = a + b - c
    df_s, df_i, df_r = s - 1, i - h, (s - 1) * (i - h)
    with np.errstate(divide="ignore", invalid="ignore"):
        den = a**2 / df_s + b**2 / df_i + c**2 / df_r
        df = np.where(den > 0, total**2 / den, float(df_s))
        df = np.where(a >= 0.5 * total, float(df_s), df)  # the seed term's own df, as `crossed_moments`
    return {
        "mean": mean,
        "seed_means": seed_means,
        "ms_seed": ms_seed,
        "ms_item": ms_item,
        "ms_res": ms_res,
        "var": total / (s * i),
        "df": df,
        "seeds": s,
        "items": i,
        "strata": h,
    }


def two_level_p(
    rows_a: np.ndarray, rows_b: np.ndarray, statistic: Statistic, margin: float = 0.0
) -> dict[str, np.ndarray]:
    """`two_level_test` vectorised over many comparisons at once (the calibration bench and the power
    tool): rows of shape (..., seeds, runs, units, stats) for each recipe, seeds paired by position.
    Returns {"diff", "se", "df", "p", "p_tost"}, each of the leading shape."""
    ra, rb = np.asarray(rows_a, np.float64), np.asarray(rows_b, np.float64)
    if ra.shape != rb.shape or ra.ndim < 4:
        raise ValueError(
            f"two_level_p: expected two (..., seeds, runs, units, stats) arrays of one shape, got {ra.shape}, "
            f"{rb.shape}"
        )
    _, ya = pseudo_values(ra, statistic)
    _, yb = pseudo_values(rb, statistic)
    d = ya.mean(axis=-2) - yb.mean(axis=-2)  # runs of a seed averaged: (..., seeds, units)
    m = crossed_moments(d)
    test = t_test(m["mean"], m["var"], m["df"], margin)
    return {"diff": m["mean"], "se": test["se"], "df": m["df"], "p": test["p"], "p_tost": test["p_tost"]}
