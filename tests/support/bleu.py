"""lem.nmt.bleu checked against sacrebleu: the check the unit and real-data BLEU tests share."""

from __future__ import annotations

import numpy as np
import pytest

from lem.nmt.bleu import N_COLUMNS, bleu_from_sums, bleu_metric, sentence_stats


def sacrebleu_corpus(hyps, refs, tokenize="13a", lang=None) -> float:
    return float(bleu_metric(tokenize, lang).corpus_score(list(hyps), [list(refs)]).score)


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
