"""lem.nmt.bleu: per-sentence BLEU statistics and corpus BLEU from their sums, equal to sacrebleu's."""

from __future__ import annotations

import random

import numpy as np
import pytest
from support import SHARED_DATA

from lem.nmt.bleu import COLUMNS, N_COLUMNS, bleu_from_sums, bleu_metric, sentence_stats

GOV = SHARED_DATA / "nlpc-en-ta-gov"  # 8,946 line-aligned en-ta government sentences


def sacrebleu_corpus(hyps, refs, tokenize="13a", lang=None) -> float:
    return float(bleu_metric(tokenize, lang).corpus_score(list(hyps), [list(refs)]).score)


def corrupted(refs: list[str], seed: int) -> list[str]:
    """Hypotheses made from real references: words dropped, swapped, taken from another line, emptied."""
    rng = random.Random(seed)
    out = []
    for i, ref in enumerate(refs):
        words = ref.split()
        kind = rng.random()
        if kind < 0.1:
            out.append("")
        elif kind < 0.2:
            out.append(refs[(i + 7) % len(refs)])  # an unrelated real sentence
        elif kind < 0.3:
            out.append(" ".join(words[:2]))  # too short for 3- and 4-grams
        else:
            kept = [w for w in words if rng.random() > 0.25]
            if len(kept) > 2 and rng.random() < 0.5:
                j = rng.randrange(len(kept) - 1)
                kept[j], kept[j + 1] = kept[j + 1], kept[j]
            out.append(" ".join(kept))
    return out


def real_lines(name: str, n: int) -> list[str]:
    if not GOV.is_dir():
        pytest.skip(f"real data absent: {GOV} (../shared/data, not part of the repository)")
    lines = (GOV / name).read_text(encoding="utf-8-sig").splitlines()
    lines = [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]
    return lines[:n]


def check_equal(hyps, refs, *, tokenize="13a", lang=None, draws=20, seed=0) -> None:
    stats = sentence_stats(hyps, refs, tokenize=tokenize, lang=lang)
    assert stats.shape == (len(refs), N_COLUMNS) and stats.dtype.kind == "i"
    assert bleu_from_sums(stats.sum(axis=0)) == pytest.approx(
        sacrebleu_corpus(hyps, refs, tokenize, lang), abs=1e-9
    )
    # resampled test sets: one vectorised call against sacrebleu on each resample
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(refs), size=(draws, len(refs)))
    ours = bleu_from_sums(stats[idx].sum(axis=1))
    assert ours.shape == (draws,)
    theirs = [sacrebleu_corpus([hyps[i] for i in row], [refs[i] for i in row], tokenize, lang) for row in idx]
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-9)


@pytest.mark.parametrize(("name", "lang"), [("En-Ta English.txt", "en"), ("En-Ta Tamil.txt", "ta")])
def test_equals_sacrebleu_on_real_sentences(name, lang):
    refs = real_lines(name, 300)
    check_equal(corrupted(refs, seed=1), refs, lang=lang)


def test_equals_sacrebleu_on_small_real_samples_with_smoothing():
    """A few sentences per sample: orders with no match (smoothed), orders with no n-gram, no match at all."""
    refs = real_lines("En-Ta English.txt", 400)
    hyps = corrupted(refs, seed=2)
    for start in range(0, 400, 4):
        check_equal(hyps[start : start + 4], refs[start : start + 4], draws=3, seed=start)


def test_columns_are_sacrebleus_segment_statistics():
    hyps, refs = ["the cat sat on the mat", "a b"], ["the cat is on the mat", "a b c"]
    stats = sentence_stats(hyps, refs)
    assert COLUMNS[:2] == ("hyp_len", "ref_len") and len(COLUMNS) == 10
    assert stats[0].tolist() == [6, 6, 5, 3, 1, 0, 6, 5, 4, 3]
    assert stats[1].tolist() == [2, 3, 2, 1, 0, 0, 2, 1, 0, 0]
    metric = bleu_metric()
    assert bleu_from_sums(stats.sum(0)) == pytest.approx(
        metric._compute_score_from_stats(list(stats.sum(0))).score, abs=1e-12
    )


@pytest.mark.parametrize(
    ("hyps", "refs"),
    [
        (["the cat sat on the mat"], ["the cat sat on the mat"]),  # perfect: 100
        (["the dog barks loudly today"], ["the cat sat on the mat"]),  # a unigram only: orders 2-4 smoothed
        (["mat the on sat cat the"], ["the cat sat on the mat"]),  # unigrams, no 3- or 4-gram match
        (["x y z w v"], ["the cat sat on the mat"]),  # no match at all: 0
        ([""], ["the cat sat on the mat"]),  # empty hypothesis: 0, brevity penalty 0
        (["", ""], ["a b c", "d e f g"]),  # every hypothesis empty
        (["the cat"], ["the cat sat on the mat"]),  # no 3- and 4-grams in the hypothesis: 0
        (["the cat sat", ""], ["the cat sat", "x"]),  # 3-grams but no 4-gram: 0
        (["the cat sat on the mat and more words here"], ["the cat sat"]),  # longer than the reference
        (["a b c d", "e f g h"], ["a b c d", "e f x h"]),
        (["a a a a a"], ["a a b"]),  # clipped counts
        (["The Cat ."], ["the cat ."]),  # case kept
    ],
)
def test_edge_cases_equal_sacrebleu(hyps, refs):
    stats = sentence_stats(hyps, refs)
    assert bleu_from_sums(stats.sum(axis=0)) == pytest.approx(sacrebleu_corpus(hyps, refs), abs=1e-9)


def test_vectorised_over_leading_axes():
    hyps = ["the cat sat on the mat", "a b c", "", "one two three four five"]
    refs = ["the cat is on the mat", "a b c d", "x y", "one two three four five"]
    stats = sentence_stats(hyps, refs)
    subsets = np.array([[[1, 1, 0, 1], [0, 1, 1, 1]], [[1, 0, 0, 0], [0, 0, 1, 0]]])  # (2, 2, n) masks
    sums = (subsets[..., None] * stats).sum(axis=-2)  # (2, 2, 10)
    scores = bleu_from_sums(sums)
    assert scores.shape == (2, 2)
    for i in range(2):
        for j in range(2):
            keep = np.flatnonzero(subsets[i, j])
            want = sacrebleu_corpus([hyps[k] for k in keep], [refs[k] for k in keep])
            assert scores[i, j] == pytest.approx(want, abs=1e-9)
    assert np.ndim(bleu_from_sums(stats.sum(0))) == 0


def test_bad_input():
    with pytest.raises(ValueError, match="2 hypotheses for 1 references"):
        sentence_stats(["a", "b"], ["a"])
    with pytest.raises(ValueError, match="10 statistics on the last axis"):
        bleu_from_sums(np.zeros((3, 8)))
    assert sentence_stats([], []).shape == (0, N_COLUMNS)
