"""The positive control's verdict proves the evaluation chain end to end: it passes against the right gold and
fails against gold shuffled within documents (30 shufflings, each mined in full: the `dag` tier). The controls
themselves: tests/unit/test_controls.py."""

from __future__ import annotations

import pytest
from support.builders import columns, news_benches

from lem.embed import generated_dictionary
from lem.evidence import controls
from lem.mine import MineSettings, chance, mine_corpus, prf


@pytest.fixture(scope="module")
def benches(tmp_path_factory):
    """The generated news benchmark of every pair, prepared as `lem data news` prepares it."""
    return news_benches(tmp_path_factory.mktemp("gen"))


@pytest.fixture(scope="module")
def lexicon():
    return generated_dictionary()


def mining_metrics(x, y, bench, gold=None) -> dict:
    """What `lem mine run` writes for the intersection: the counts, chance and ceiling."""
    src, sdocs, _ = columns(bench.src)
    tgt, tdocs, _ = columns(bench.tgt)
    gold = set(bench.gold) if gold is None else gold
    res = mine_corpus(x, y, src, tgt, sdocs, tdocs, MineSettings())
    groups, total = chance.candidate_groups(src, tgt, sdocs, tdocs, gold)
    return {
        "intersection": prf({(a, b) for a, b, _ in res.pairs["intersection"]}, gold),
        "chance": chance.mining_chance_analytic(groups, total, settings=MineSettings()),
        "ceiling": chance.mining_ceiling(src, tgt, sdocs, tdocs, gold),
    }


def test_positive_verdict_proves_the_chain(benches, lexicon):
    """What the test proves: the dictionary control passes against the right gold, and fails against gold
    shuffled within documents (a broken chain: gold not naming the sentences it aligns) in all but a few
    of 30 shuffles, at alpha 0.01, with no lift asked."""
    bench = benches["si-en"]
    _, tdocs, _ = columns(bench.tgt)
    tgt = [r[0] for r in bench.tgt]
    x = controls.lexical_embeddings([r[2] for r in bench.src], "si", lexicon)
    y = controls.lexical_embeddings([r[2] for r in bench.tgt], "en", lexicon)
    assert controls.positive_control_verdict(
        mining_metrics(x, y, bench), "gen", "si-en", controls.PositiveBar()
    )[0]
    bar = controls.PositiveBar(lift=0.0, alpha=0.01)
    passed = [
        controls.positive_control_verdict(
            mining_metrics(x, y, bench, controls.shuffle_gold_within_documents(bench.gold, tgt, tdocs, seed)),
            "gen",
            "si-en",
            bar,
        )[0]
        for seed in range(30)
    ]
    assert sum(passed) <= 2
