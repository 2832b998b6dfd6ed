"""BLEU from per-sentence sufficient statistics, so that test sentences can be resampled.

Corpus BLEU is a function of sums over sentences: for n = 1..4 the matched and the total n-grams, the
hypothesis length and the (closest) reference length. `sentence_stats` extracts them per sentence with
sacrebleu's own tokenisation and counting (`BLEU._extract_corpus_statistics`, what sacrebleu's paired tests
use); `bleu_from_sums` is sacrebleu's `BLEU.compute_bleu` with the pipeline's settings (exponential
smoothing, no effective order, 4-grams, case kept), vectorised over any leading axes, so that a bootstrap
draws sentence indices, sums their rows and scores thousands of resamples at once.

Columns, in sacrebleu's order (`COLUMNS`): hypothesis length, reference length, matches for n = 1..4,
totals for n = 1..4.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# Imported inside functions: sacrebleu (`lem nmt --help` and `lem report --help` import this module and need
# no sacrebleu)

MAX_ORDER = 4
COLUMNS = (
    "hyp_len",
    "ref_len",
    *(f"match{n}" for n in range(1, MAX_ORDER + 1)),
    *(f"total{n}" for n in range(1, MAX_ORDER + 1)),
)
N_COLUMNS = len(COLUMNS)  # 10
# sacrebleu's `my_log(0)`: the log of a zero precision (an n-gram order with no hypothesis n-grams)
_LOG_ZERO = -9999999999.0


def bleu_metric(tokenize: str = "13a", lang: str | None = None):
    """The sacrebleu BLEU the pipeline scores with (`lem.nmt.translate.score`): its defaults but the tokenizer."""
    from sacrebleu.metrics import BLEU

    return BLEU(tokenize=tokenize, trg_lang=lang or "")


def sentence_stats(
    hyps: Sequence[str], refs: Sequence[str], *, tokenize: str = "13a", lang: str | None = None
) -> np.ndarray:
    """Per sentence (one reference each), the 10 sufficient statistics of BLEU (`COLUMNS`) as an integer
    array of shape (n, 10); their column sums give sacrebleu's corpus BLEU through `bleu_from_sums`."""
    if len(hyps) != len(refs):
        raise ValueError(f"bleu: {len(hyps)} hypotheses for {len(refs)} references")
    if not refs:
        return np.zeros((0, N_COLUMNS), dtype=np.int64)
    metric = bleu_metric(tokenize, lang)
    stats = metric._extract_corpus_statistics(list(hyps), [list(refs)])
    out = np.asarray(stats, dtype=np.int64).reshape(len(refs), N_COLUMNS)
    return out


def bleu_from_sums(sums: np.ndarray) -> np.ndarray:
    """Corpus BLEU (0..100) from summed statistics `sums` (..., 10), vectorised over the leading axes:
    sacrebleu's `compute_bleu` with exponential smoothing (an order with no match counts 100 / (2^k total),
    k the number of such orders so far), no effective order, and its edge cases: no match at any order
    scores 0, an order with no hypothesis n-grams scores 0, an empty hypothesis side has brevity penalty 0."""
    s = np.asarray(sums, dtype=np.float64)
    if s.shape[-1] != N_COLUMNS:
        raise ValueError(f"bleu: expected {N_COLUMNS} statistics on the last axis, got shape {s.shape}")
    sys_len, ref_len = s[..., 0], s[..., 1]
    correct, total = s[..., 2 : 2 + MAX_ORDER], s[..., 2 + MAX_ORDER :]
    with np.errstate(divide="ignore", invalid="ignore"):
        bp = np.where(
            sys_len < ref_len,
            np.where(sys_len > 0, np.exp(1.0 - ref_len / np.where(sys_len > 0, sys_len, 1.0)), 0.0),
            1.0,
        )
        # sacrebleu stops at the first order with no hypothesis n-grams: that order and the ones after it
        # keep precision 0, whose log is _LOG_ZERO (the score underflows to 0)
        reached = np.cumprod(total > 0, axis=-1).astype(bool)
        zero = (correct == 0) & reached
        halvings = np.cumsum(zero, axis=-1)  # smooth_mteval = 2 ** (orders with no match so far)
        safe_total = np.where(total > 0, total, 1.0)
        precision = np.where(
            zero, 100.0 / (np.power(2.0, halvings) * safe_total), 100.0 * correct / safe_total
        )
        log_p = np.where(reached, np.log(np.where(reached, precision, 1.0)), _LOG_ZERO)
    # sacrebleu sums the logs in order (n = 1..4), then divides by the order
    acc = log_p[..., 0]
    for n in range(1, MAX_ORDER):
        acc = acc + log_p[..., n]
    score = bp * np.exp(acc / MAX_ORDER)
    return np.where(correct.sum(axis=-1) > 0, score, 0.0)
