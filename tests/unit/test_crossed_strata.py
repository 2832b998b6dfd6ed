"""The two-level test with its items in fixed strata (a pooled news set's sites, issue 50):
`lem.evidence.crossed.stratified_moments`, and the report's comparisons reading a pooled set's strata from its
documents' ids (`<site>/<doc>`, lem.data.news.load_sites). The unstratified test: tests/unit/test_crossed.py."""

from __future__ import annotations

import numpy as np
import pytest

from lem.evidence import crossed, stats
from lem.report.comparisons import Items, compare

SITES = ["ITN"] * 6 + ["Army_news"] * 10 + ["Hiru"] * 14


def table(rng: np.random.Generator, reps: int, seeds: int, offsets: dict[str, float], sd_sxh: float = 0.0):
    """(reps, seeds, items) differences: seed part 0.03, item part 0.08, residual 0.15, a fixed offset per
    site (`offsets`) and a random seed x site part of s.d. `sd_sxh`; and the true variance of their mean."""
    names = list(dict.fromkeys(SITES))
    code = np.asarray([names.index(s) for s in SITES])
    n = len(SITES)
    d = (
        rng.normal(0, 0.03, (reps, seeds, 1))
        + rng.normal(0, sd_sxh, (reps, seeds, len(names)))[..., code]
        + rng.normal(0, 0.08, (reps, 1, n))
        + rng.normal(0, 0.15, (reps, seeds, n))
        + np.asarray([offsets.get(s, 0.0) for s in SITES])
    )
    w = np.bincount(code) / n
    true = 0.03**2 / seeds + (w**2).sum() * sd_sxh**2 / seeds + 0.08**2 / n + 0.15**2 / (seeds * n)
    return d, true


def test_one_stratum_or_no_item_within_a_stratum_is_the_crossed_test() -> None:
    d = np.random.default_rng(1).normal(size=(5, 30))
    plain = crossed.crossed_moments(d)
    for strata in (["x"] * 30, [str(k) for k in range(30)]):
        got = crossed.stratified_moments(d, strata)
        assert all(np.allclose(got[k], plain[k]) for k in ("mean", "var", "df", "ms_item", "ms_res"))
    with pytest.raises(ValueError, match="29 strata for 30 items"):
        crossed.stratified_moments(d, ["x"] * 29)


def test_a_fixed_difference_between_sites_is_no_noise_of_the_stratified_test() -> None:
    """Adding a constant to one site's items moves the pooled mean by its weight and leaves the stratified
    variance as it was; the unstratified test counts it as item noise (conservative, not wrong)."""
    d, _ = table(np.random.default_rng(2), 1, 6, {})
    shifted = d + np.asarray([0.2 if s == "Hiru" else 0.0 for s in SITES])
    a, b = (crossed.stratified_moments(x[0], SITES) for x in (d, shifted))
    assert np.isclose(b["mean"] - a["mean"], 0.2 * 14 / 30)
    assert np.isclose(a["var"], b["var"]) and np.isclose(a["df"], b["df"])
    assert crossed.crossed_moments(shifted[0])["var"] > 1.5 * crossed.crossed_moments(d[0])["var"]


@pytest.mark.parametrize("sd_sxh", [0.0, 0.04])
def test_the_stratified_variance_is_unbiased_and_the_test_keeps_its_level(sd_sxh: float) -> None:
    """4,000 tables of 6 seeds x 30 items in three unequal sites, with site offsets and (second case) a seed x
    site part: the mean of the estimated variance is the true variance of the pooled mean (within 5 %), and a
    test of the true pooled difference rejects at most at its level (0.03-0.04 here, as the crossed test
    without sites: its floors and seed degrees of freedom are conservative with 6 seeds)."""
    offsets = {"ITN": 0.05, "Army_news": -0.02, "Hiru": 0.01}
    d, true = table(np.random.default_rng(3), 4000, 6, offsets, sd_sxh)
    m = crossed.stratified_moments(d, SITES)
    assert abs(float(np.mean(m["var"])) / true - 1) < 0.05
    target = sum(offsets[s] for s in SITES) / len(SITES)
    p = crossed.t_test(m["mean"] - target, m["var"], m["df"])["p"]
    assert (
        0.02 < float(np.mean(p < 0.05)) <= 0.06
    )  # never liberal; as conservative as the crossed test's floors


def test_two_level_test_resamples_items_within_their_strata() -> None:
    rng = np.random.default_rng(4)
    n = len(SITES)
    base = rng.integers(1, 4, (6, n))
    site_gain = np.asarray([1 if s == "Hiru" else 0 for s in SITES])

    def runs(extra):  # per-document [n_correct, n_pred, n_gold] counts of 6 seeds
        correct = np.minimum(base + extra + rng.integers(0, 2, (6, n)), 6)
        return {str(k): [np.stack([correct[k], np.full(n, 6), np.full(n, 6)], axis=1)] for k in range(6)}

    a, b = runs(site_gain), runs(0)
    plain = crossed.two_level_test(a, b, stats.f1_stat)
    strat = crossed.two_level_test(a, b, stats.f1_stat, strata=SITES)
    assert strat["diff"] == plain["diff"] and strat["se"] < plain["se"]
    assert strat["method"] == f"{crossed.METHOD}, items within 3 strata" and plain["method"] == crossed.METHOD


def test_the_report_tests_a_pooled_news_set_within_its_sites() -> None:
    """Mining metrics whose documents are `<site>/<doc>` (a pooled set) carry their sites to the test; a
    single site's set (documents without `/`) has none."""
    rng = np.random.default_rng(5)
    items = Items()
    docs = [f"{s}/{k}" for k, s in enumerate(SITES)]
    for variant, extra in (("lem", 1), ("mlm_tlm", 0)):
        for seed in range(4):
            correct = rng.integers(0, 4, len(SITES)) + extra * np.asarray([s == "Hiru" for s in SITES])
            counts = np.stack([correct, np.full(len(SITES), 6), np.full(len(SITES), 6)], axis=1).tolist()
            data = {"units": {"units": docs, "intersection": counts}}
            items.add_mining(
                {"dataset": "news", "pair": "si-ta", "variant": variant, "seed": str(seed)}, data, "x"
            )
            single = {"units": {"units": [str(k) for k in range(len(SITES))], "intersection": counts}}
            items.add_mining(
                {"dataset": "news_itn", "pair": "si-ta", "variant": variant, "seed": str(seed)}, single, "y"
            )
    assert items.strata == {("mining", "news", "si-ta"): SITES}
    table_ = compare(items, ["mlm_tlm", "lem"])
    row = table_[(table_.dataset == "news") & (table_.a == "lem")].iloc[0]
    expected = crossed.two_level_test(
        items.runs("mining", "news", "si-ta", "lem"), items.runs("mining", "news", "si-ta", "mlm_tlm"),
        stats.f1_stat, strata=SITES,
    )  # fmt: skip
    assert np.isclose(row["p"], expected["p"]) and np.isclose(row["diff"], expected["diff"])
