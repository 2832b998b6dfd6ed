"""lem.evidence.stats: intervals over seeds, paired bootstrap, approximate randomisation, Holm."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import f1_score

from lem.evidence import stats


def mining_rows(rng, docs: int, recall: float) -> np.ndarray:
    """Per-document (n_correct, n_pred, n_gold) of a system finding each gold link with prob. `recall`."""
    gold = rng.integers(1, 10, docs)
    pred = gold + rng.integers(0, 3, docs)
    return np.stack([rng.binomial(gold, recall), pred, gold], axis=1)


def test_mean_interval_by_hand():
    r = stats.mean_interval([1.0, 2.0, 3.0])
    assert r["n"] == 3 and r["mean"] == pytest.approx(2.0) and r["sd"] == pytest.approx(1.0)
    half = 4.302652729911275 / np.sqrt(3)  # t_{2, 0.975}
    assert r["low"] == pytest.approx(2 - half) and r["high"] == pytest.approx(2 + half)
    wider = stats.mean_interval([1.0, 2.0, 3.0], confidence=0.99)
    assert wider["high"] - wider["low"] > r["high"] - r["low"]


def test_mean_interval_one_value_has_no_interval():
    assert stats.mean_interval([0.7]) == {
        "n": 1, "mean": 0.7, "sd": None, "low": None, "high": None, "confidence": 0.95,
    }  # fmt: skip


@pytest.mark.parametrize(
    "values, kwargs, match",
    [
        ([], {}, "no values"),
        ([1.0, float("nan")], {}, "finite"),
        ([1.0, 2.0], {"confidence": 1.0}, "confidence"),
    ],
)
def test_mean_interval_errors(values, kwargs, match):
    with pytest.raises(ValueError, match=match):
        stats.mean_interval(values, **kwargs)


def test_prf_statistics_match_pooled_prf():
    sums = np.array([[3.0, 4.0, 6.0], [0.0, 0.0, 5.0]])
    assert stats.precision_stat(sums).tolist() == [0.75, 0.0]
    assert stats.recall_stat(sums).tolist() == [0.5, 0.0]
    assert stats.f1_stat(sums) == pytest.approx([0.6, 0.0])


def test_macro_f1_counts_agree_with_sklearn():
    rng = np.random.default_rng(3)
    gold, pred = rng.integers(0, 3, 200), rng.integers(0, 3, 200)
    pred[:5] = 3  # a label with predictions but no gold
    rows = stats.macro_f1_counts(gold, pred, 4)
    want = f1_score(gold, pred, labels=[0, 1, 2, 3], average="macro", zero_division=0)
    assert stats.macro_f1_stat(rows.sum(axis=0)[None])[0] == pytest.approx(want)
    with pytest.raises(ValueError, match="label indices"):
        stats.macro_f1_counts(gold, pred, 3)


def test_bootstrap_identical_systems_p_is_one():
    rows = mining_rows(np.random.default_rng(0), 200, 0.7)
    r = stats.paired_bootstrap(rows, rows, stats.f1_stat, n=2000, seed=1)
    assert r["diff"] == 0 and r["p"] == 1.0 and r["low"] == r["high"] == 0


def test_bootstrap_clearly_better_system_p_small():
    rng = np.random.default_rng(0)
    good = mining_rows(rng, 300, 0.9)
    bad = good.copy()
    bad[:, 0] = rng.binomial(good[:, 2], 0.6)
    r = stats.paired_bootstrap(good, bad, stats.f1_stat, n=2000, seed=1)
    assert r["diff"] > 0.2 and r["p"] < 0.001 and 0 < r["low"] < r["diff"] < r["high"]
    assert r["p"] == pytest.approx(1 / 2001)  # never 0: (1 + count) / (1 + n)
    flipped = stats.paired_bootstrap(bad, good, stats.f1_stat, n=2000, seed=1)
    assert flipped["diff"] == pytest.approx(-r["diff"]) and flipped["p"] == r["p"]


def test_bootstrap_deterministic_and_seeds_summed():
    rng = np.random.default_rng(5)
    a = np.stack([mining_rows(rng, 50, 0.7) for _ in range(3)])  # (seeds, docs, stats)
    b = np.stack([mining_rows(rng, 50, 0.7) for _ in range(3)])
    r1 = stats.paired_bootstrap(a, b, n=500, seed=7)
    assert r1 == stats.paired_bootstrap(a, b, n=500, seed=7)
    assert r1 == stats.paired_bootstrap(a.sum(axis=0), b.sum(axis=0), n=500, seed=7)
    assert r1["p"] != stats.paired_bootstrap(a, b, n=500, seed=8)["p"]


@pytest.mark.parametrize("test", ["bootstrap", "randomisation"])
def test_false_positive_rate_near_alpha(test):
    """Two systems of equal skill: about 5 % of comparisons have p < 0.05 (the tests are calibrated)."""
    rng = np.random.default_rng(11)
    rejections = 0
    trials = 200
    for i in range(trials):
        if test == "bootstrap":
            gold = rng.integers(1, 10, 100)
            a = np.stack([rng.binomial(gold, 0.7), gold, gold], axis=1)
            b = np.stack([rng.binomial(gold, 0.7), gold, gold], axis=1)
            p = stats.paired_bootstrap(a, b, stats.f1_stat, n=1000, seed=i)["p"]
        else:
            a = stats.accuracy_counts(np.zeros(200, int), rng.binomial(1, 0.3, 200))
            b = stats.accuracy_counts(np.zeros(200, int), rng.binomial(1, 0.3, 200))
            p = stats.approximate_randomisation(a, b, stats.ratio_stat, n=1000, seed=i)["p"]
        rejections += p < 0.05
    assert 0.01 <= rejections / trials <= 0.10


def test_bootstrap_errors():
    a = np.ones((5, 3))
    with pytest.raises(ValueError, match="differ in shape"):
        stats.paired_bootstrap(a, np.ones((4, 3)))
    with pytest.raises(ValueError, match="resamples"):
        stats.paired_bootstrap(a, a, n=0)
    with pytest.raises(ValueError, match="no units"):
        stats.paired_bootstrap(np.ones((0, 3)), np.ones((0, 3)))
    with pytest.raises(ValueError, match="one value per resample"):
        stats.paired_bootstrap(a, a, statistic=lambda s: s, n=10)


def test_randomisation_accuracy():
    gold = np.array([0, 1, 2] * 100)
    good = gold.copy()
    bad = gold.copy()
    bad[::2] = (bad[::2] + 1) % 3  # half wrong
    a, b = stats.accuracy_counts(gold, good), stats.accuracy_counts(gold, bad)
    r = stats.approximate_randomisation(a, b, stats.ratio_stat, n=2000, seed=0)
    assert r["a"] == 1.0 and r["b"] == pytest.approx(0.5) and r["p"] < 0.001
    same = stats.approximate_randomisation(a, a, stats.ratio_stat, n=500, seed=0)
    assert same["diff"] == 0 and same["p"] == 1.0


def test_randomisation_macro_f1_and_kept_precision():
    rng = np.random.default_rng(2)
    gold = rng.integers(0, 3, 300)
    pa = np.where(rng.random(300) < 0.8, gold, rng.integers(0, 3, 300))
    pb = np.where(rng.random(300) < 0.8, gold, rng.integers(0, 3, 300))
    r = stats.approximate_randomisation(
        stats.macro_f1_counts(gold, pa, 3),
        stats.macro_f1_counts(gold, pb, 3),
        stats.macro_f1_stat,
        n=2000,
        seed=3,
    )
    assert r["a"] == pytest.approx(f1_score(gold, pa, average="macro"))
    assert r["p"] > 0.05  # equally good systems
    clean = rng.random(400) < 0.5
    kept_good = clean | (rng.random(400) < 0.05)
    kept_rand = rng.random(400) < 0.5
    k = stats.approximate_randomisation(
        stats.kept_precision_counts(kept_good, clean),
        stats.kept_precision_counts(kept_rand, clean),
        n=2000,
        seed=3,
    )
    assert k["a"] > 0.9 and k["p"] < 0.001


def test_holm_by_hand():
    # sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> 0.06 (monotone)
    assert stats.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert stats.holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert stats.holm([0.2]) == [0.2] and stats.holm([]) == []


def test_holm_errors():
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        stats.holm([0.1, 1.5])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        stats.holm([float("nan")])


# ---------------------------------------------------------------- the seed-level test the report uses


def test_seed_paired_test_is_the_paired_t_test_over_seeds():
    from scipy.stats import ttest_rel

    a = {"13": 0.30, "14": 0.36, "15": 0.41, "16": 0.50}
    b = {"14": 0.31, "13": 0.27, "15": 0.33}  # seed 16 has no partner: not used
    r = stats.seed_paired_test(a, b)
    va, vb = [0.30, 0.36, 0.41], [0.27, 0.31, 0.33]
    assert r["seeds"] == ["13", "14", "15"] and r["n_seeds"] == 3
    assert r["p"] == pytest.approx(ttest_rel(va, vb).pvalue)
    assert r["diff"] == pytest.approx(np.mean(va) - np.mean(vb)) and r["diffs"] == pytest.approx(
        [0.03, 0.05, 0.08]
    )
    sd = np.std([0.03, 0.05, 0.08], ddof=1)
    half = 4.302652729911275 * sd / np.sqrt(3)  # t(0.975, 2)
    assert (r["low"], r["high"]) == pytest.approx((r["diff"] - half, r["diff"] + half))
    pooled = np.sqrt((np.var(va, ddof=1) + np.var(vb, ddof=1)) / 2)
    assert r["effect_size"] == pytest.approx(r["diff"] / pooled)
    assert stats.seed_paired_p(np.array([[0.03, 0.05, 0.08]]))[0] == pytest.approx(r["p"])


def test_seed_paired_test_without_two_seeds_or_spread_claims_nothing():
    one = stats.seed_paired_test({"1": 0.5}, {"1": 0.2})
    assert (
        one["n_seeds"] == 1
        and np.isnan(one["p"])
        and np.isnan(one["low"])
        and one["diff"] == pytest.approx(0.3)
    )
    flat = stats.seed_paired_test({"1": 0.5, "2": 0.6}, {"1": 0.4, "2": 0.5})
    assert np.isnan(flat["p"])  # the same difference at every seed: no spread to judge it by
    same = stats.seed_paired_test({"1": 0.5, "2": 0.6}, {"1": 0.5, "2": 0.6})
    assert same["p"] == 1.0
    with pytest.raises(ValueError, match="per-seed scores must be finite"):
        stats.seed_paired_test({"1": float("nan"), "2": 0.1}, {"1": 0.1, "2": 0.1})
