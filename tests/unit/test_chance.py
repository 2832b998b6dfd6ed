"""Chance levels of mining (lem.mine.chance), classification and curation (lem.evidence.chance)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from support.builders import news_benches

from lem.evidence import chance
from lem.evidence.controls import random_embeddings
from lem.mine import MineSettings, mine_corpus, prf
from lem.mine import chance as mine_chance


@pytest.fixture(scope="module")
def news(tmp_path_factory):
    """The generated si-en news benchmark: (src ids, docs), (tgt ids, docs), gold links."""
    b = news_benches(tmp_path_factory.mktemp("gen"))["si-en"]
    return (
        [r[0] for r in b.src],
        [r[1] for r in b.src],
        [r[0] for r in b.tgt],
        [r[1] for r in b.tgt],
        set(b.gold),
    )


def f1s(result: dict) -> dict[str, float]:
    return {k: v["f1"] for k, v in result.items() if isinstance(v, dict) and "f1" in v}


def test_candidate_groups_by_hand():
    src = ["s1", "s2", "s3", "s4"]
    tgt = ["t1", "t2", "t3"]
    gold = {("s1", "t1"), ("s2", "t2"), ("s3", "t1"), ("s4", "t3")}  # s3-t1 crosses documents
    groups, total = mine_chance.candidate_groups(src, tgt, ["A", "A", "B", "C"], ["A", "A", "A"], gold)
    assert groups == [mine_chance.Group(2, 3, 2)] and total == 4  # B and C have no target document
    whole, total = mine_chance.candidate_groups(
        src, tgt, ["A", "A", "B", "C"], ["A", "A", "A"], gold, per_document=False
    )
    assert whole == [mine_chance.Group(4, 3, 4)] and total == 4


def test_analytic_forward_backward_by_hand():
    r = mine_chance.mining_chance_analytic([(2, 4, 2), (3, 3, 3)], n_gold=6)
    # forward: E[tp] = 2/4 + 3/3 = 1.5 of 5 predictions; backward: 2/2 + 3/3 = 2 of 7
    assert r["forward"]["precision"] == pytest.approx(0.3) and r["forward"]["recall"] == pytest.approx(0.25)
    assert r["forward"]["f1"] == pytest.approx(3 / 11)
    assert r["backward"]["n_correct"] == pytest.approx(2.0) and r["backward"]["n_pred"] == 7
    # intersection (i.i.d.): E[pred] = 8/5 + 9/5, E[tp] = 2/5 + 3/5
    assert r["intersection"]["n_pred"] == pytest.approx(3.4) and r["intersection"][
        "n_correct"
    ] == pytest.approx(1.0)
    assert "analytic" in r["method"]


def test_intersection_formula_matches_iid_scores():
    """n m / (n + m - 1) mutual best pairs in an i.i.d. score matrix (the exact case)."""
    rng = np.random.default_rng(0)
    for n, m in [(7, 10), (3, 12)]:
        counts = []
        for _ in range(4000):
            s = rng.random((n, m))
            counts.append(((s == s.max(1, keepdims=True)) & (s == s.max(0, keepdims=True))).sum())
        assert np.mean(counts) == pytest.approx(n * m / (n + m - 1), rel=0.03)


@pytest.mark.parametrize("values", ["gaussian", "tied"])
def test_top_k_is_the_stable_sorts_prefix(values):
    """The simulation's neighbour search equals a stable sort of whole rows, ties at the k-th value included."""
    rng = np.random.default_rng(3)
    for _ in range(200):  # row lengths on both sides of the switch to the partition search
        n = int(rng.integers(1, 40))
        m = int(rng.integers(1, 2 * mine_chance.PARTITION_FROM + 10))
        if values == "tied":
            s = rng.integers(-2, 3, size=(n, m)).astype(np.float32)
        else:
            s = rng.standard_normal((n, m)).astype(np.float32)
        for k in (1, 3, 4, m, m + 5):
            expected = np.argsort(-s, axis=1, kind="stable")[:, :k]
            got = mine_chance.top_k_stable(s, k)
            assert got.dtype == np.int64 and np.array_equal(got, expected), (n, m, k)


def test_analytic_errors():
    with pytest.raises(ValueError, match="unknown retrieval"):
        mine_chance.mining_chance_analytic([(2, 2, 1)], retrieval=("sideways",))
    with pytest.raises(ValueError, match="needs the mining settings"):
        mine_chance.mining_chance_analytic([(2, 2, 1)], retrieval=("max",))
    with pytest.raises(ValueError, match="more gold links"):
        mine_chance.mining_chance_analytic([(2, 2, 5)])
    with pytest.raises(ValueError, match="below"):
        mine_chance.mining_chance_analytic([(2, 2, 2)], n_gold=1)


@pytest.mark.parametrize("margin", ["absolute", "ratio"])
def test_analytic_agrees_with_permutation_on_random_embeddings(news, margin):
    src, sdocs, tgt, tdocs, gold = news
    settings = MineSettings(margin=margin)
    groups, total = mine_chance.candidate_groups(src, tgt, sdocs, tdocs, gold)
    analytic = mine_chance.mining_chance_analytic(groups, total, settings=settings)
    x, y = random_embeddings(len(src), 64, 1), random_embeddings(len(tgt), 64, 2)
    perm = mine_chance.mining_chance_permutation(x, y, src, tgt, sdocs, tdocs, gold, settings, n=40, seed=0)
    for d in ("forward", "backward", "intersection"):
        for metric in ("precision", "recall", "f1"):
            assert perm[d][metric] == pytest.approx(analytic[d][metric], abs=0.02), (d, metric)
    assert ("simulated" in analytic["method"]) == (margin == "ratio")


def test_negative_control_scores_at_analytic_chance(news):
    """Random embeddings mined with the default settings, averaged over seeds: at chance."""
    src, sdocs, tgt, tdocs, gold = news
    settings = MineSettings(retrieval=("forward", "backward", "intersection", "max"))
    groups, total = mine_chance.candidate_groups(src, tgt, sdocs, tdocs, gold)
    analytic = mine_chance.mining_chance_analytic(groups, total, settings.retrieval, settings=settings)
    got: dict[str, list[float]] = {}
    for seed in range(12):
        x, y = random_embeddings(len(src), 64, 100 + seed), random_embeddings(len(tgt), 64, 200 + seed)
        for d, pairs in mine_corpus(x, y, src, tgt, sdocs, tdocs, settings).pairs.items():
            got.setdefault(d, []).append(prf({(s, t) for s, t, _ in pairs}, gold)["f1"])
    for d in settings.retrieval:
        assert np.mean(got[d]) == pytest.approx(analytic[d]["f1"], abs=0.025), d


def test_permutation_deterministic_and_whole_corpus(news):
    src, sdocs, tgt, tdocs, gold = news
    x, y = random_embeddings(len(src), 16, 1), random_embeddings(len(tgt), 16, 2)
    a = mine_chance.mining_chance_permutation(x, y, src, tgt, sdocs, tdocs, gold, n=3, seed=4)
    assert a == mine_chance.mining_chance_permutation(x, y, src, tgt, sdocs, tdocs, gold, n=3, seed=4)
    whole = mine_chance.mining_chance_permutation(
        x, y, src, tgt, sdocs, tdocs, gold, {"per_document": False}, n=3
    )
    groups, total = mine_chance.candidate_groups(src, tgt, sdocs, tdocs, gold, per_document=False)
    assert whole["forward"]["f1"] < 0.03 and "corpus" in whole["method"]
    assert mine_chance.mining_chance_analytic(groups, total)["forward"]["f1"] < 0.01
    with pytest.raises(ValueError, match="rows"):
        mine_chance.mining_chance_permutation(x[:-1], y, src, tgt, sdocs, tdocs, gold)


def test_mining_ceiling(news):
    src, sdocs, tgt, tdocs, gold = news
    c = mine_chance.mining_ceiling(src, tgt, sdocs, tdocs, gold)
    assert c["intersection"]["f1"] == 1.0
    # forward mines one target for every source, also those without a gold link
    assert c["forward"]["precision"] == pytest.approx(len(gold) / len(src))
    hand = mine_chance.mining_ceiling(
        ["a", "b"], ["x", "y"], ["1", "1"], ["1", "1"], {("a", "x"), ("a", "y"), ("b", "x")}
    )
    assert hand["intersection"]["n_correct"] == 2 and hand["forward"]["n_correct"] == 2


def test_classification_chance_by_hand():
    gold = ["Neutral"] * 62 + ["Negative"] * 27 + ["Positive"] * 11
    r = chance.classification_chance(gold)
    assert r["accuracy"] == pytest.approx(0.62) and r["majority_label"] == "Neutral"
    assert r["macro_f1"] == pytest.approx(1 / 3)
    assert r["macro_f1_majority"] == pytest.approx(2 * 0.62 / 1.62 / 3)
    assert r["accuracy_prior_random"] == pytest.approx(0.62**2 + 0.27**2 + 0.11**2)
    assert r["macro_f1"] >= max(r["macro_f1_majority"], r["macro_f1_uniform"])
    assert (
        chance.classification_chance(gold, labels=["Negative", "Neutral", "Positive", "Mixed"])["macro_f1"]
        == 0.25
    )
    with pytest.raises(ValueError, match="not among"):
        chance.classification_chance(gold, labels=["Neutral"])


def test_classification_permutation_matches_analytic():
    rng = np.random.default_rng(0)
    gold = list(rng.choice(["Neutral", "Negative", "Positive"], 3000, p=[0.62, 0.27, 0.11]))
    prior = list(rng.choice(["Neutral", "Negative", "Positive"], 3000, p=[0.62, 0.27, 0.11]))
    perm = chance.classification_chance_permutation(gold, prior, n=200, seed=1)
    r = chance.classification_chance(gold)
    assert perm["macro_f1"] == pytest.approx(r["macro_f1"], abs=0.02)
    assert perm["accuracy"] == pytest.approx(r["accuracy_prior_random"], abs=0.02)
    majority = chance.classification_chance_permutation(gold, ["Neutral"] * 3000, n=20, seed=1)
    assert majority["accuracy"] == pytest.approx(r["accuracy"])


def test_curation_chance_exact_average_precision():
    """The expected average precision of a random ranking, against every ranking of 6 pairs (3 clean)."""
    clean = np.array([1, 1, 1, 0, 0, 0], bool)
    aps = []
    for order in itertools.permutations(range(6)):
        hits = clean[list(order)].astype(float)
        aps.append(((np.cumsum(hits) / np.arange(1, 7))[hits > 0]).mean())
    r = chance.curation_chance(clean, [0.25, 0.5])
    assert r["average_precision"] == pytest.approx(np.mean(aps))
    assert r["precision_at_0.25"] == r["precision_at_0.5"] == r["clean_share"] == 0.5
    assert chance.curation_chance([False, False])["average_precision"] == 0.0
    with pytest.raises(ValueError, match="non-empty"):
        chance.curation_chance([])
