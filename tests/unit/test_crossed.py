"""The two-level test (lem.evidence.crossed), the declared families (lem.evidence.compare) and the comparisons
and verdicts (lem.report.comparisons, lem.report.verdicts), checked against brute-force re-computations and
small simulations with the real design's variance parts."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import t as student_t

from lem.evidence import compare, crossed, simulate, stats
from lem.report import comparisons, verdicts

REPO_CONFIG = Path(__file__).resolve().parents[2] / "config" / "config.yaml"


def brute_pseudo(rows: np.ndarray, statistic) -> np.ndarray:
    """Jackknife pseudo-values by deleting one unit at a time in a loop, centred on the full score."""
    n = len(rows)
    full = float(statistic(rows.sum(axis=0)[None])[0])
    loo = np.array([float(statistic(np.delete(rows, i, axis=0).sum(axis=0)[None])[0]) for i in range(n)])
    return full + (n - 1) * (loo.mean() - loo)


def brute_test(d: np.ndarray) -> tuple[float, float, float]:
    """Two-way crossed ANOVA of an S x I table by loops: (mean, var of the mean with both parts floored at the
    residual, Satterthwaite df with the seed term on S - 1; S - 1 alone where the seed term is half or more)."""
    s, i = d.shape
    g = d.mean()
    ms_s = i * sum((d[a].mean() - g) ** 2 for a in range(s)) / (s - 1)
    ms_i = s * sum((d[:, b].mean() - g) ** 2 for b in range(i)) / (i - 1)
    ms_r = sum((d[a, b] - d[a].mean() - d[:, b].mean() + g) ** 2 for a in range(s) for b in range(i)) / (
        (s - 1) * (i - 1)
    )
    a_, b_ = max(ms_s, ms_r), max(ms_i, ms_r)
    total = a_ + b_ - ms_r
    df = total**2 / (a_**2 / (s - 1) + b_**2 / (i - 1) + ms_r**2 / ((s - 1) * (i - 1)))
    if a_ >= 0.5 * total:
        df = s - 1
    return g, total / (s * i), df


def mining_rows(rng, docs=30, skill=0.4):
    gold = 1 + rng.poisson(3, size=docs)
    correct = rng.binomial(gold, skill)
    mined = correct + rng.binomial(gold - correct, 0.5)
    return np.stack([correct, mined, gold], axis=1).astype(float)


def test_pseudo_values_average_to_the_score_and_give_the_jackknife_variance():
    rng = np.random.default_rng(0)
    rows = mining_rows(rng)
    score, y = crossed.pseudo_values(rows, stats.f1_stat)
    assert score == pytest.approx(float(stats.f1_stat(rows.sum(axis=0))))
    assert y.mean() == pytest.approx(score, abs=1e-12)
    assert y == pytest.approx(brute_pseudo(rows, stats.f1_stat), abs=1e-12)
    # vectorised over leading axes: the same per seed
    many = np.stack([mining_rows(rng) for _ in range(3)])
    _, ys = crossed.pseudo_values(many, stats.f1_stat)
    assert ys[2] == pytest.approx(brute_pseudo(many[2], stats.f1_stat), abs=1e-12)


def test_two_level_test_is_the_crossed_anova_recomputed_by_hand():
    rng = np.random.default_rng(1)
    a = {str(s): [mining_rows(rng, skill=0.45)] for s in (13, 14, 15, 16)}
    b = {str(s): [mining_rows(rng, skill=0.40)] for s in (13, 14, 15, 16)}
    # the items must be the same documents: give b a's gold counts
    for s in a:
        b[s][0][:, 2] = a[s][0][:, 2]
    r = crossed.two_level_test(a, b, stats.f1_stat, margin=0.02)
    d = np.stack([brute_pseudo(a[s][0], stats.f1_stat) - brute_pseudo(b[s][0], stats.f1_stat) for s in a])
    mean, var, df = brute_test(d)
    assert r["diff"] == pytest.approx(mean, abs=1e-12)
    assert r["diff"] == pytest.approx(np.mean(r["scores_a"]) - np.mean(r["scores_b"]), abs=1e-12)
    assert r["se"] == pytest.approx(math.sqrt(var)) and r["df"] == pytest.approx(df)
    assert r["p"] == pytest.approx(2 * student_t.sf(abs(mean) / math.sqrt(var), df))
    half = student_t.ppf(0.975, df) * math.sqrt(var)
    assert (r["low"], r["high"]) == pytest.approx((mean - half, mean + half))
    tost = max(
        student_t.sf((mean + 0.02) / math.sqrt(var), df), student_t.cdf((mean - 0.02) / math.sqrt(var), df)
    )
    assert r["p_tost"] == pytest.approx(tost)
    diffs = np.array(r["diffs"])
    assert r["d_z"] == pytest.approx(diffs.mean() / diffs.std(ddof=1))
    assert r["d_av"] == pytest.approx(r["diff"] / ((r["sd_a"] + r["sd_b"]) / 2))
    # the vectorised form the bench and the power tool use gives the same numbers
    ra = np.stack([a[s][0] for s in a])[:, None]
    rb = np.stack([b[s][0] for s in a])[:, None]
    v = crossed.two_level_p(ra, rb, stats.f1_stat, margin=0.02)
    assert (float(v["p"]), float(v["p_tost"])) == pytest.approx((r["p"], r["p_tost"]))


def test_three_seeds_that_agree_by_chance_are_not_a_finding():
    """The report's old mark: three seed differences of -0.0396 / -0.0381 / -0.0365 while each seed's
    documents carry independent noise. A t-test over the three seed scores alone calls it certain; the
    two-level test floors the seed part at what the item noise implies."""
    rng = np.random.default_rng(2)
    docs, seeds = 105, 3
    gold = 1 + rng.poisson(4, size=docs)
    a, b = {}, {}
    for s in range(seeds):
        ca = rng.binomial(gold, 0.30)
        cb = rng.binomial(gold, 0.30)
        a[str(s)] = [np.stack([ca, gold, gold], axis=1).astype(float)]
        b[str(s)] = [np.stack([cb, gold, gold], axis=1).astype(float)]
    # shift b's correct counts on random documents until each seed's F1 difference is -0.038 +- 0.0015
    for s, target in zip(map(str, range(seeds)), (-0.0396, -0.0381, -0.0365), strict=True):
        for _ in range(10_000):
            fa = stats.f1_stat(a[s][0].sum(axis=0))
            fb = stats.f1_stat(b[s][0].sum(axis=0))
            gap = (fa - fb) - target
            if abs(gap) < 0.0008:
                break
            i = rng.integers(docs)
            step = 1 if gap > 0 else -1  # b needs more correct links when a - b is above the target
            if 0 <= b[s][0][i, 0] + step <= gold[i]:
                b[s][0][i, 0] += step
    seed_only = stats.seed_paired_test(
        {s: float(stats.f1_stat(a[s][0].sum(axis=0))) for s in a},
        {s: float(stats.f1_stat(b[s][0].sum(axis=0))) for s in b},
    )
    two = crossed.two_level_test(a, b, stats.f1_stat)
    assert seed_only["p"] < 0.01
    assert two["p"] > 0.05 and two["high"] - two["low"] > 4 * (seed_only["high"] - seed_only["low"])


def test_a_shared_recipe_by_item_part_keeps_the_test_calibrated_where_seeds_alone_are_not():
    """Ten seeds, small seed spread, a recipe-by-document part shared by every seed: the seed-only test
    rejects equal recipes far above 5 %, the two-level test near it (a quick version of the bench)."""
    rng = np.random.default_rng(3)
    design = simulate.Design(seeds=10, seed_sd=0.02, base_sd=0.1, rbi_sd=0.3)
    a, b = simulate.simulate("mining", design, 1500, rng)
    two = crossed.two_level_p(a, b, stats.f1_stat)["p"]
    fa, fb = stats.f1_stat(a.sum(axis=-2)).mean(-1), stats.f1_stat(b.sum(axis=-2)).mean(-1)
    seed_only = stats.seed_paired_p(fa - fb)
    assert np.mean(seed_only < 0.05) > 0.15
    assert np.mean(two < 0.05) < 0.075


def items_for(rng, variants, seeds=(13, 14, 15), shift=None, docs=40, pairs=("si-en", "ta-en")):
    items = comparisons.Items()
    shift = shift or {}
    for pair in pairs:
        gold = 1 + rng.poisson(4, size=docs)
        for v in variants:
            for s in seeds:
                c = rng.binomial(gold, min(0.95, 0.4 + shift.get(v, 0.0)))
                rows = np.stack([c, gold, gold], axis=1)
                key = {"variant": v, "dataset": "news", "pair": pair, "seed": str(s)}
                items.add_mining(
                    key,
                    {"units": {"units": [f"d{i}" for i in range(docs)], "intersection": rows.tolist()}},
                    "m.json",
                )
    return items


def test_families_are_declared_and_holm_runs_within_each():
    rng = np.random.default_rng(4)
    variants = ["base", "mlm_tlm", "lem", "lem_ne"]
    items = items_for(rng, variants, shift={"mlm_tlm": 0.3, "lem": 0.3, "lem_ne": 0.3})
    table = comparisons.compare(items, variants)
    fam = {(r.a, r.b): r.family for r in table.itertuples()}
    assert fam == {
        ("lem", "mlm_tlm"): "primary",
        ("lem_ne", "mlm_tlm"): "primary",
        ("mlm_tlm", "base"): "exploratory",
    }
    for _family, part in table.groupby("family"):
        assert (part.family_size == len(part)).all()
        assert part.p_holm.tolist() == pytest.approx(stats.holm(part.p.tolist()))
    assert set(table.verdict) <= set(compare.VERDICTS)
    better = table[table.a == "mlm_tlm"]
    assert (better.verdict == "higher").all() and better.significant.all()
    assert (table[table.verdict == "inconclusive"].mde > 0).all()


def test_an_untested_comparison_keeps_its_place_in_the_family():
    rng = np.random.default_rng(5)
    variants = ["mlm_tlm", "lem"]
    items = items_for(rng, variants, shift={"lem": 0.25})
    free = comparisons.compare(items, variants)
    blocked = comparisons.compare(
        items, variants, no_signal={("mining", "news", "ta-en"): "control_lexical failed"}
    )
    assert (free.family_size == 2).all() and (blocked.family_size == 2).all()
    si = lambda t: t[t.pair == "si-en"].iloc[0]  # noqa: E731
    assert si(blocked).p_holm == pytest.approx(min(1.0, 2 * si(blocked).p))  # not p alone: m stays 2
    ta = blocked[blocked.pair == "ta-en"].iloc[0]
    assert np.isnan(ta.p) and ta.verdict == "inconclusive" and ta.test.startswith("none (no signal")


def test_equal_recipes_measured_precisely_are_called_equivalent_within_the_margin():
    rng = np.random.default_rng(6)
    variants = ["mlm_tlm", "lem"]
    items = items_for(rng, variants, seeds=range(10), docs=400, pairs=("si-en",))
    ev = compare.EvidenceSettings.from_dict({"margin": {"mining": 0.05}})
    row = comparisons.compare(items, variants, evidence=ev).iloc[0]
    assert row.verdict == "equivalent" and row.p_tost_holm < 0.05 and abs(row["diff"]) < 0.05
    tight = comparisons.compare(
        items, variants, evidence=compare.EvidenceSettings.from_dict({"margin": {"mining": 0.001}})
    ).iloc[0]
    assert tight.verdict == "inconclusive"
    assert "inconclusive" in verdicts.verdict_sentence(
        tight
    ) and "detects a difference of" in verdicts.verdict_sentence(tight)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"alpha": 2}, r"evidence: alpha=2: expected a probability strictly between 0 and 1"),
        ({"margin": {"mining": -1}}, r"evidence: margin: mining=-1: expected a finite number > 0"),
        ({"families": {"main": []}}, r"evidence: families\.main: unknown family"),
        ({"families": {"primary": [{"a": "lem", "b": "mlm_tlm", "tasks": ["pos"]}]}}, r"primary\[0\]\.tasks"),
        ({"typo": 1}, r"evidence: unknown key\(s\) \['typo'\]"),
    ],
)
def test_evidence_settings_refuse_naming_the_key(raw, message):
    with pytest.raises(ValueError, match=message):
        compare.EvidenceSettings.from_dict(raw)


def test_a_comparison_declared_in_two_families_is_refused():
    fam = {
        "primary": [{"a": "lem*", "b": "mlm_tlm", "tasks": ["mining"]}],
        "exploratory": [{"a": "lem", "b": "mlm_tlm", "tasks": ["mining"]}],
    }
    with pytest.raises(
        ValueError, match="lem vs mlm_tlm on mining is declared in primary and in exploratory"
    ):
        compare.declared(["mlm_tlm", "lem"], fam)


def test_the_planned_power_is_the_simulated_rejection_rate():
    """The power tool's expected mean squares and degrees of freedom predict how often the two-level test
    rejects a true difference (5 seeds, the seed part dominant) and sizes seeds monotonically."""
    from dataclasses import replace

    from lem.evidence import power

    rng = np.random.default_rng(7)
    design = replace(simulate.Design(seed_sd=0.15, base_sd=0.15), seeds=5)
    a, b = simulate.simulate("mining", design, 1500, rng, delta=0.25)
    res = crossed.two_level_p(a, b, stats.f1_stat)
    _, ya = crossed.pseudo_values(a, stats.f1_stat)
    _, yb = crossed.pseudo_values(b, stats.f1_stat)
    m = crossed.crossed_moments(ya.mean(-2) - yb.mean(-2))
    s, i = 5, a.shape[-2]
    parts = {
        "var_seed": max(float(np.mean(m["ms_seed"] - m["ms_res"])), 0.0) / i,
        "var_item": max(float(np.mean(m["ms_item"] - m["ms_res"])), 0.0) / s,
        "var_res": float(np.mean(m["ms_res"])),
        "items": i,
    }
    se, df = power.planned(parts, s, i)
    predicted = power.power_at(float(np.mean(res["diff"])), se, df, 0.05)
    assert predicted == pytest.approx(float(np.mean(res["p"] < 0.05)), abs=0.06)
    n = power.seeds_needed(parts, 0.05, 0.05 / 3, 0.8, i)
    assert n is not None
    assert power.power_at(0.05, *power.planned(parts, n, i), 0.05 / 3) >= 0.8
    assert power.power_at(0.05, *power.planned(parts, n - 1, i), 0.05 / 3) < 0.8


def write_mining(results, variant, seed, counts, pair="si-en"):
    import json

    path = results / f"mining/{variant}/seed{seed}/news/{pair}.metrics.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    prf = {"precision": 0.5, "recall": 0.5, "f1": 0.5, "n_pred": 4, "n_gold": 4, "n_correct": 2}
    keys = {"task": "mining", "variant": variant, "dataset": "news", "pair": pair, "seed": str(seed)}
    units = {"units": [f"d{i}" for i in range(len(counts))], "intersection": [list(c) for c in counts]}
    path.write_text(
        json.dumps({"keys": keys, "forward": prf, "backward": prf, "intersection": prf, "units": units})
    )


@pytest.fixture(scope="module")
def power_results(tmp_path_factory):
    rng = np.random.default_rng(8)
    results = tmp_path_factory.mktemp("power") / "results"
    gold = 1 + rng.poisson(4, size=60)
    for variant, skill in (("base", 0.3), ("mlm_tlm", 0.4), ("lem", 0.4)):
        for seed in (13, 14, 15):
            c = rng.binomial(gold, skill + rng.normal(0, 0.02))
            write_mining(results, variant, seed, np.stack([c, gold, gold], axis=1).tolist())
    return results


def test_plan_power_prints_every_declared_comparison_at_its_family_level(power_results, capsys):
    from lem.cli import main

    assert main(["plan", "power", "--results", str(power_results), "--difference", "0.05"]) == 0
    out = capsys.readouterr().out
    assert "first Holm threshold" in out and "80 % upper bounds" in out
    assert "\nprimary | mining news si-en | lem vs mlm_tlm |" in out
    assert "\nexploratory | mining news si-en | mlm_tlm vs base |" in out
    assert "| 3 x 60 |" in out and "| 0.0500 |" in out  # a family of one: alpha itself


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--alpha", "2"], "--alpha 2.0: expected a probability strictly between 0 and 1"),
        (["--alpha", "0"], "--alpha 0.0: expected a probability strictly between 0 and 1"),
        (["--power", "0"], "--power 0.0: expected a probability strictly between 0 and 1"),
        (["--power", "1.5"], "--power 1.5: expected a probability strictly between 0 and 1"),
        (["--difference", "5"], "--difference 5.0: expected a difference > 0 and <= 1"),
        (["--difference", "nan"], "--difference nan: expected a difference > 0 and <= 1"),
        (["--bleu-difference", "-1"], "--bleu-difference -1.0: expected a difference > 0 and <= 100"),
    ],
)
def test_plan_power_refuses_impossible_arguments_in_one_line(power_results, capsys, args, message):
    from lem.cli import main

    rc = main(["plan", "power", "--results", str(power_results), *args])
    err = capsys.readouterr().err
    assert rc != 0 and message in err and len(err.strip().splitlines()) == 1


def test_plan_power_names_a_file_that_is_not_a_metrics_file(tmp_path, capsys):
    from lem.cli import main

    bad = tmp_path / "results/mining/lem/seed1/news/si-en.metrics.json"
    bad.parent.mkdir(parents=True)
    bad.write_text("localhost\n")
    assert main(["plan", "power", "--results", str(tmp_path / "results")]) != 0
    err = capsys.readouterr().err.strip()
    assert str(bad) in err and len(err.splitlines()) == 1


def test_nmt_comparisons_resample_the_test_sentences_of_each_run():
    """An NMT run that kept its per-sentence BLEU statistics (lem.nmt.bleu) is compared over seeds and
    sentences: the cell's units are the sentences, the score of each run is its corpus BLEU."""
    from lem.nmt.bleu import bleu_from_sums

    rng = np.random.default_rng(9)
    design = simulate.Design(seeds=3, units=80)
    oracle, random_ = simulate.simulate("nmt", design, 1, rng, delta=1.0)
    mlm, lem = simulate.simulate("nmt", design, 1, rng)
    items = comparisons.Items()
    for row, rows in (("oracle", oracle), ("random", random_), ("mlm_tlm", mlm), ("lem", lem)):
        for s in range(3):
            stats_ = rows[0, s, 0]
            key = {"variant": row, "dataset": "curation", "pair": "si-en", "share": "0.25", "seed": str(s)}
            data = {"bleu": float(bleu_from_sums(stats_.sum(axis=0))),
                    "items": {"ids": list(range(80)), "stats": stats_.tolist()}}  # fmt: skip
            items.add_nmt(key, data, f"{row}{s}.json")
    table = comparisons.compare(items, ["mlm_tlm", "lem"])
    control = table[table.role == "control"].iloc[0]
    assert control.verdict == "signal" and control.units == "80 sentences"
    row = table[table.role == "comparison"].iloc[0]
    assert (row.family, row.units, row.margin) == ("secondary", "80 sentences", 1.0)
    want = np.mean([float(bleu_from_sums(lem[0, s, 0].sum(axis=0))) for s in range(3)])
    assert row.value_a == pytest.approx(want) and not np.isnan(row.p)


def test_two_runs_that_never_differ_are_tested_with_p_one():
    """Two recipes whose runs predict the same on every item (a collapsed classifier): no variation at all,
    the comparison is tested (p 1), not left untested."""
    rows = {str(s): [stats.macro_f1_counts(np.zeros(20, int), np.zeros(20, int), 2)] for s in (1, 2)}
    r = crossed.two_level_test(rows, rows, stats.macro_f1_stat)
    assert r["diff"] == 0 and r["p"] == 1.0 and r["df"] == 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("evidence: {alpha: 2}\n", "evidence.alpha"),
        ("varients: [base]\n", "varients"),
        ("a: [\n", "expected a YAML config file"),
    ],
)
def test_plan_power_checks_its_config_as_the_workflow_does(power_results, tmp_path, capsys, text, message):
    from lem.cli import main

    bad = tmp_path / "bad.yaml"
    bad.write_text((REPO_CONFIG.read_text() if "evidence" in text or "varients" in text else "") + text)
    rc = main(["plan", "power", "--results", str(power_results), "--configfile", str(bad)])
    err = capsys.readouterr().err.strip()
    assert rc != 0 and message in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("df", [2, 4, 9, 20])
@pytest.mark.parametrize("alpha", [0.05, 0.05 / 3])
def test_the_minimum_detectable_difference_is_detected_with_the_power_it_states(df, alpha):
    """At the reported MDE the test rejects in 80 % of simulated runs (within 0.02): the estimate's error
    simulated as the test models it (a normal mean over a chi-square standard error on df degrees of
    freedom), 200,000 draws; the old normal-shift shortcut fell short at few degrees of freedom."""
    se = 0.04
    mde = crossed.minimum_detectable(se, df, alpha, 0.8)
    rng = np.random.default_rng(df * 1000 + round(1 / alpha))
    n = 200_000
    estimate = mde + se * rng.standard_normal(n)
    se_hat = se * np.sqrt(rng.chisquare(df, n) / df)
    rejected = np.abs(estimate / se_hat) > student_t.ppf(1 - alpha / 2, df)
    assert abs(rejected.mean() - 0.8) < 0.02
    assert crossed.power_at(mde, se, df, alpha) == pytest.approx(0.8, abs=1e-6)
    shortcut = (student_t.ppf(1 - alpha / 2, df) + student_t.ppf(0.8, df)) * se
    if df <= 4:
        assert mde > shortcut
    if df == 2 and alpha < 0.05:
        assert crossed.power_at(shortcut, se, df, alpha) < 0.75  # what the report used to promise as 80 %


def test_the_minimum_detectable_difference_of_an_exact_estimate_is_zero_and_of_no_df_unknown():
    assert crossed.minimum_detectable(0.0, 4, 0.05) == 0.0
    assert math.isnan(crossed.minimum_detectable(0.1, 0, 0.05))
    assert math.isnan(crossed.minimum_detectable(float("nan"), 4, 0.05))


def _holm_rows(p: np.ndarray) -> np.ndarray:
    """`stats.holm` of every row of a (families, m) array at once."""
    m = p.shape[-1]
    order = np.argsort(p, axis=-1, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * np.take_along_axis(p, order, -1))
    adjusted = np.empty_like(p)
    np.put_along_axis(adjusted, order, np.maximum.accumulate(scaled, axis=-1), -1)
    return adjusted


def _simulated_families(rng, families: int, m: int, margin: float, seeds: int = 8, items: int = 20) -> dict:
    """`families` families of m two-level tests on seeds x items tables of differences (a seed part, an item
    part and seed-by-item noise around each comparison's true difference: half of them 0, the others a
    few standard errors or a difference well inside the margin), with Holm's p's, the Holm-step and TOST
    intervals the report shows and the unadjusted 95 % one."""
    kind = rng.integers(0, 4, (families, m))  # 0, 1: no difference; 2: inside the margin; 3: a large one
    delta = np.select(
        [kind == 2, kind == 3], [rng.uniform(-0.5, 0.5, kind.shape) * margin, rng.choice([-1, 1], kind.shape)
                                 * rng.uniform(0.02, 0.3, kind.shape)], 0.0
    )  # fmt: skip
    d = (
        delta[..., None, None]
        + rng.normal(0, 0.02, (families, m, seeds, 1))
        + rng.normal(0, 0.03, (families, m, 1, items))
        + rng.normal(0, 0.05, (families, m, seeds, items))
    )
    mo = crossed.crossed_moments(d)
    test = crossed.t_test(mo["mean"], mo["var"], mo["df"], margin)
    p, p_tost = test["p"], test["p_tost"]
    p_holm, p_tost_holm = _holm_rows(p), _holm_rows(p_tost)
    step = crossed.holm_step_alpha(p, p_holm, 0.05)
    tost_step = crossed.holm_step_alpha(p_tost, p_tost_holm, 0.05)
    out = dict(delta=delta, mean=mo["mean"], p_holm=p_holm, p_tost_holm=p_tost_holm, step=step)
    out["holm"] = crossed.t_interval(mo["mean"], test["se"], mo["df"], step)
    out["tost"] = crossed.tost_interval(mo["mean"], test["se"], mo["df"], tost_step)
    out["raw"] = crossed.t_interval(mo["mean"], test["se"], mo["df"], 0.05)
    assert p_holm[:20].tolist() == [pytest.approx(stats.holm(row)) for row in p[:20].tolist()]
    return out


@pytest.mark.parametrize("m", [1, 3, 6])
def test_the_holm_interval_excludes_0_exactly_when_holm_rejects_and_covers_as_it_says(m):
    """Over thousands of simulated families of two-level tests: the interval at the level of the Holm step that
    decided a row excludes 0 exactly when Holm rejects it, and the TOST interval at 1 - 2 x its Holm step's
    alpha lies inside the margin exactly when TOST's Holm p is below alpha (the rows' verdicts), where the
    unadjusted 95 % interval disagrees with Holm in some families of several rows. Each row's interval covers
    its true difference at least 95 % of the time, and no-difference rows' intervals exclude 0 in at most
    alpha of the families (Holm's family-wise error), where the unadjusted intervals' do far more often."""
    rng = np.random.default_rng(40 + m)
    margin, n = 0.1, 4000
    sim = _simulated_families(rng, n, m, margin)
    (lo, hi), (tlo, thi), (rlo, rhi) = sim["holm"], sim["tost"], sim["raw"]
    rejected = sim["p_holm"] < 0.05
    assert rejected.any() and (~rejected).any()
    assert np.array_equal((lo > 0) | (hi < 0), rejected)
    assert np.array_equal((tlo > -margin) & (thi < margin), sim["p_tost_holm"] < 0.05)
    assert (sim["p_tost_holm"] < 0.05).any()
    assert ((sim["step"] >= 0.05 / m - 1e-15) & (sim["step"] <= 0.05 + 1e-15)).all()  # Bonferroni .. alpha
    raw_excludes = (rlo > 0) | (rhi < 0)
    if m > 1:  # what the report showed before: an interval off 0 beside "neither different"
        assert (raw_excludes & ~rejected).any()
    covered = (lo <= sim["delta"]) & (sim["delta"] <= hi)
    assert covered.mean() >= 0.95
    null = sim["delta"] == 0
    fwer = (((lo > 0) | (hi < 0)) & null).any(axis=1).mean()
    raw_fwer = (raw_excludes & null).any(axis=1).mean()
    assert fwer <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / n)
    if m == 6:
        assert raw_fwer > 0.1  # the unadjusted intervals of three null rows: about 1 - 0.96^3


def test_the_holm_intervals_of_a_family_of_real_differences_cover_together():
    """Every row of each family rejected (six large differences): the Holm step's intervals, the widest for the
    smallest p, cover all six true differences together in about 1 - alpha of the families (measured 0.948 at
    20,000 families; not guaranteed as Bonferroni's 1 - alpha / m is, which is wider and disagrees with
    Holm)."""
    rng = np.random.default_rng(1)
    n, m, seeds, items = 4000, 6, 8, 20
    d = (
        0.3
        + rng.normal(0, 0.02, (n, m, seeds, 1))
        + rng.normal(0, 0.03, (n, m, 1, items))
        + rng.normal(0, 0.05, (n, m, seeds, items))
    )
    mo = crossed.crossed_moments(d)
    test = crossed.t_test(mo["mean"], mo["var"], mo["df"])
    p_holm = _holm_rows(test["p"])
    assert (p_holm < 0.05).all()
    lo, hi = crossed.t_interval(
        mo["mean"], test["se"], mo["df"], crossed.holm_step_alpha(test["p"], p_holm, 0.05)
    )
    assert ((lo <= 0.3) & (0.3 <= hi)).all(axis=1).mean() > 0.94


def test_a_difference_without_spread_is_tested_exactly():
    """A seeds x items table with no spread: identical runs are equivalent within any margin (p 1, TOST p 0)
    and say why; one nonzero difference on every seed and item is different (p 0); neither is NaN, and the
    interval is the point itself."""
    rows = {
        str(s): [stats.kept_precision_counts(np.arange(40) < 10, np.arange(40) % 3 > 0)] for s in (1, 2, 3)
    }
    same = crossed.two_level_test(rows, rows, stats.ratio_stat, margin=0.02)
    assert same["spread"] == crossed.IDENTICAL and (same["diff"], same["se"]) == (0.0, 0.0)
    assert (same["p"], same["p_tost"], same["low"], same["high"]) == (1.0, 0.0, 0.0, 0.0)
    runs = lambda bleu: {str(s): [np.array([[b, 1.0]])] for s, b in zip((1, 2, 3), bleu, strict=True)}  # noqa: E731
    for shift, margin in ((2.0, 1.0), (0.5, 1.0)):
        const = crossed.two_level_test(runs([20.0, 21.0, 23.0]), runs([20 - shift, 21 - shift, 23 - shift]),
                                       stats.ratio_stat, margin=margin)  # fmt: skip
        assert const["spread"] == crossed.CONSTANT and const["diff"] == pytest.approx(shift)
        assert const["p"] == 0.0 and const["p_tost"] == (0.0 if shift < margin else 1.0)
        assert const["low"] == const["high"] == pytest.approx(shift)
    varied = crossed.two_level_test(
        runs([20.0, 21.0, 23.0]), runs([19.0, 21.5, 21.0]), stats.ratio_stat, margin=1
    )
    assert varied["spread"] == "" and 0 < varied["p"] < 1
