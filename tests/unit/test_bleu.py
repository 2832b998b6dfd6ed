"""lem.nmt.bleu: per-sentence BLEU statistics and corpus BLEU from their sums, equal to sacrebleu's."""

from __future__ import annotations

import numpy as np
import pytest
from support.bleu import sacrebleu_corpus

from lem.nmt.bleu import COLUMNS, N_COLUMNS, bleu_from_sums, bleu_metric, sentence_stats


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
