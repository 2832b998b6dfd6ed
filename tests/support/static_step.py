"""The static training step's tests' random rows and models (tests/unit/test_static_step.py,
tests/dag/test_static_step_run.py), of one vocabulary."""

from __future__ import annotations

from lem.stand_in import random_feature_rows, random_mlm, word_level_tokenizer

VOCAB = 120


def tokenizer():
    return word_level_tokenizer(VOCAB)


def feature_rows(n: int, lo: int, hi: int, seed: int) -> list[dict]:
    """Rows as `lem features` writes them: ids, word ids (1-3 subwords per word), entity flags per word."""
    return random_feature_rows(n, lo, hi, seed, VOCAB)


def tiny_mlm(seed: int = 0, dropout: float = 0.0):
    return random_mlm(VOCAB, seed=seed, dropout=dropout)  # 66 positions
