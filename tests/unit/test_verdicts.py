"""The verdicts in words and tables (`lem.report.verdicts`, `lem.report.comparisons`): each row's verdict
agrees with the interval it is read from, every sentence prints its p and Holm p, every level printed is the
configured one, a row and its sentence use one verdict word, and a difference without spread has a verdict."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from test_crossed import items_for

from lem.evidence import crossed
from lem.evidence.compare import EvidenceSettings
from lem.report import comparisons, verdicts
from lem.report.intervals import report_intervals
from lem.report.markdown import markdown
from lem.report.verdicts import interim, verdict_lines, verdict_sentence

VARIANTS = ["base", "mlm_tlm", "lem", "lem_ne"]
PAIRS = ("si-en", "si-ta", "ta-en")


def table_of(rng_seed: int, evidence: EvidenceSettings, **kwargs) -> pd.DataFrame:
    """A run of four rows on three pairs (8 seeds, 150 documents): lem near mlm_tlm, lem_ne a little lower,
    mlm_tlm well above base; the primary and exploratory families of the default declaration."""
    rng = np.random.default_rng(rng_seed)
    shift = {"mlm_tlm": 0.15, "lem": 0.15, "lem_ne": 0.11}
    items = items_for(rng, VARIANTS, seeds=range(8), shift=shift, docs=150, pairs=PAIRS)
    return comparisons.compare(items, VARIANTS, evidence=evidence, **kwargs)


def sentence_verdict(sentence: str) -> str:
    """The verdict word a generated sentence says."""
    said = re.search(r"is (higher|lower) than|is (equivalent) to|: (inconclusive)", sentence)
    assert said, sentence
    return next(g for g in said.groups() if g)


@pytest.mark.parametrize("rng_seed", [0, 1])
def test_every_verdict_agrees_with_the_interval_it_is_read_from(rng_seed):
    """Each row of a run's families, one cell untested (no signal): higher or lower exactly when its Holm
    interval excludes 0, equivalent only with its TOST interval inside the margin (exactly when TOST's Holm p
    is below alpha); the sentence and the table say the row's verdict word, its p and Holm p (an untested row
    "-"), and no row reads "excluding 0" beside "neither different"."""
    ev = EvidenceSettings.from_dict({"margin": {"mining": 0.06}})
    table = table_of(rng_seed, ev, no_signal={("mining", "news", "ta-en"): "control_lexical failed"})
    rows = table[table.role == "comparison"]
    assert set(rows.verdict) == {"higher", "lower", "equivalent", "inconclusive"}
    md = "\n".join(verdicts.comparisons_markdown(table, ev.alpha))
    for r in rows.itertuples():
        sentence = verdicts.verdict_sentence(r)
        assert sentence_verdict(sentence) == r.verdict
        assert (
            f"| {verdicts.MARK.get(r.verdict, '')} {verdicts.verdict_label(r)} |".replace("|  ", "| ") in md
        )
        if verdicts.untested(r):
            assert r.pair == "ta-en" and r.verdict == "inconclusive" and np.isnan(r.holm_low)
            assert "inconclusive (untested): no signal: control_lexical failed" in sentence
            assert f"p -, Holm p - of {r.family_size}" in sentence
            continue
        excludes = r.holm_low > 0 or r.holm_high < 0
        assert excludes == (r.verdict in ("higher", "lower")) == (r.p_holm < ev.alpha)
        inside = -r.margin < r.tost_low and r.tost_high < r.margin
        assert inside == (r.p_tost_holm < ev.alpha)
        if r.verdict == "equivalent":
            assert inside and not excludes
        assert f"p {r.p:.3g}, Holm p {r.p_holm:.3g} of {r.family_size}" in sentence
        assert f"{verdicts.level(r.holm_level)} Holm interval" in sentence
        assert not ("excluding 0" in sentence and "neither different" in sentence)
        if r.verdict == "inconclusive":
            assert (
                "including 0" in sentence and "not inside" in sentence and "detects a difference" in sentence
            )


def test_sentences_and_tables_say_the_configured_levels():
    """confidence 0.9 and power 0.9: every unadjusted interval printed is a 90 % one and every MDE is at 90 %
    power, in the sentences and in the table's header; the Holm and TOST intervals say their own levels."""
    ev = EvidenceSettings.from_dict({"confidence": 0.9, "power": 0.9})
    table = table_of(2, ev)
    rows = table[table.role == "comparison"]
    assert (rows.confidence == 0.9).all() and (rows.power == 0.9).all()
    default = table_of(2, EvidenceSettings())
    width = lambda t: (t.high - t.low).to_numpy()  # noqa: E731
    assert (width(rows) < width(default[default.role == "comparison"])).all()  # a 90 % interval, not 95 %
    holm_default = default[default.role == "comparison"].holm_low
    assert np.allclose(rows.holm_low, holm_default)  # the Holm interval: alpha's level, not confidence's
    lines = verdicts.verdict_lines(table)
    sentences = [line for line in lines if line.startswith("- ")]
    assert len(sentences) == len(rows)
    assert all(re.findall(r"unadjusted (\S+) % interval", s) == ["90"] for s in sentences)
    powers = [p for s in sentences for p in re.findall(r"with (\S+) % power", s)]
    assert powers and set(powers) == {"90"}
    assert not any("95 % interval" in s or "80 % power" in s for s in sentences)
    header = next(
        line for line in verdicts.comparisons_markdown(table, ev.alpha) if line.startswith("| family")
    )
    assert "| 90 % interval (unadjusted) |" in header and "| MDE (90 % power) |" in header
    for r in rows.itertuples():
        assert any(1 - r.holm_level == pytest.approx(ev.alpha / k) for k in range(1, r.family_size + 1))
        assert verdicts.level(r.holm_level) in verdicts.verdict_sentence(r)


def test_the_summary_tables_say_their_configured_level():
    """The per-variant tables' brackets and the page's first words follow the level the summary's intervals
    were computed at (`report_intervals(..., confidence)`)."""
    summary = pd.DataFrame(
        [{"task": "mining", "dataset": "news", "pair": "si-en", "metric": "intersection_f1", "variant": v,
          "mean": 0.5, "std": 0.05, "n": 3, "low": 0.4, "high": 0.6, "chance": 0.1, "ceiling": 1.0}
         for v in ("base", "mlm_tlm")]
    )  # fmt: skip
    md = markdown(report_intervals(summary, comparisons.Items(), 0.9), ["base", "mlm_tlm"])
    assert "with its 90 % interval in brackets" in md and "Brackets: 90 % t-interval over seeds" in md
    assert "95 %" not in md.split("Controls")[0]


def nmt_items(shift: float) -> comparisons.Items:
    """NMT runs without per-sentence statistics (corpus BLEU, one item), three seeds: mlm_tlm `shift` BLEU
    above base on every seed, the oracle far above random (the control shows signal)."""
    items = comparisons.Items()
    bleu = {"base": (10.0, 12.0, 11.0), "oracle": (30.0, 29.0, 32.0), "random": (5.0, 6.0, 5.5)}
    bleu["mlm_tlm"] = tuple(b + shift for b in bleu["base"])
    for variant, scores in bleu.items():
        for seed, b in zip(("13", "14", "15"), scores, strict=True):
            key = {"variant": variant, "dataset": "curation", "share": "0.5", "pair": "si-en", "seed": seed}
            items.add_nmt(key, {"bleu": b}, f"{variant}{seed}.json")
    return items


def test_a_difference_without_spread_gets_a_verdict_and_says_why():
    """Two rows identical on every seed and item: equivalent within the margin (p 1, TOST p 0), never NaN,
    and the sentence and the table say why; the same nonzero difference on every seed and item outside the
    margin: higher (p 0), its interval the point itself."""
    items = comparisons.Items()
    clean = [int(i % 3 > 0) for i in range(60)]
    for variant in ("base", "mlm_tlm"):
        for seed in ("1", "2", "3"):
            key = {"variant": variant, "dataset": "noisy", "pair": "si-en", "seed": seed}
            data = {"average_precision": 0.5, "settings": {"keep_fractions": [0.25]},
                    "items": {"rank": list(range(1, 61)), "clean": clean}}  # fmt: skip
            items.add_curation(key, data, f"{variant}{seed}.json")
    row = comparisons.compare(items, ["base", "mlm_tlm"]).iloc[0]
    assert (row.verdict, row.spread, row["diff"], row.p, row.p_tost) == (
        "equivalent", crossed.IDENTICAL, 0.0, 1.0, 0.0
    )  # fmt: skip
    assert not row[["p", "p_holm", "p_tost", "p_tost_holm", "holm_low", "tost_low", "mde"]].isna().any()
    sentence = verdicts.verdict_sentence(row)
    assert (
        f"is equivalent to `base` within ±0.02 ({crossed.IDENTICAL}: " in sentence and "nan" not in sentence
    )
    assert "p 1, Holm p 1 of 1" in sentence and "TOST Holm p 0 of 1" in sentence
    assert f"equivalent ({crossed.IDENTICAL})" in "\n".join(
        verdicts.comparisons_markdown(pd.DataFrame([row]), 0.05)
    )
    table = comparisons.compare(nmt_items(2.0), ["base", "mlm_tlm"])
    row = table[table.role == "comparison"].iloc[0]
    assert (row.verdict, row.spread, row.p, row.p_holm) == ("higher", crossed.CONSTANT, 0.0, 0.0)
    assert row.holm_low == row.holm_high == pytest.approx(2.0) and row.margin == 1.0
    assert f"`mlm_tlm` is higher than `base` ({crossed.CONSTANT}: " in verdicts.verdict_sentence(row)


def test_a_run_with_fewer_seeds_than_declared_words_no_verdict():
    table = pd.DataFrame(
        [
            {"role": "comparison", "family": "primary", "verdict": "lower", "seeds": 3, "task": "mining",
             "dataset": "news", "pair": "si-en", "metric": "intersection_f1", "a": "lem", "b": "mlm_tlm",
             "diff": -0.04},
            {"role": "control", "family": "", "verdict": "higher", "seeds": 3, "task": "nmt", "dataset": "x",
             "pair": "si-en", "metric": "bleu", "a": "oracle", "b": "random", "diff": 1.0},
        ]
    )  # fmt: skip
    assert interim(table, None) is table and interim(table, 3) is table  # nothing declared, or all seeds ran
    out = interim(table, 12)
    assert list(out["verdict"]) == ["interim", "higher"]  # a control is not a declared comparison
    lines = verdict_lines(out[out["role"] == "comparison"])
    assert any(line.startswith("**Interim: 3 of 12 declared seeds.**") for line in lines)
    sentence = verdict_sentence(out.iloc[0])
    assert "interim, 3 of 12 declared seeds: no verdict is worded" in sentence
    assert "lower" not in sentence and "higher" not in sentence
