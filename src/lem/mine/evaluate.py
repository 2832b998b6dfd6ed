"""Evaluation of mined pairs: precision, recall and F1 against gold links (`prf`), xsim, the gold file."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lem.core.inputs import InputError
from lem.evidence.stats import prf_counts
from lem.mine.margin import mine
from lem.mine.settings import MineSettings


def prf(pred: set[tuple[str, str]], gold: set[tuple[str, str]]) -> dict[str, float | int]:
    """Precision = correct / mined, recall = correct / gold, on deduplicated pairs (as the authors, deduped);
    F1 and the zero cases as `lem.evidence.stats.prf_counts`."""
    n_correct = len(pred & gold)
    return {
        **prf_counts(n_correct, len(pred), len(gold)),
        "n_pred": len(pred),
        "n_gold": len(gold),
        "n_correct": n_correct,
    }


def unit_counts(
    pred: dict[str, set[tuple[str, str]]], gold: set[tuple[str, str]], unit_of: dict[str, str]
) -> dict[str, object]:
    """Per-unit sufficient statistics of P/R/F1 for the report's paired bootstrap (`lem.evidence.stats`): the unit of a
    pair is `unit_of[src_id]` (its source document, or the source sentence when there are none), and each
    unit carries [n_correct, n_pred, n_gold] per direction; the column sums give `prf`'s counts."""
    units = sorted(set(unit_of.values()))
    index = {u: i for i, u in enumerate(units)}
    out: dict[str, object] = {"columns": ["n_correct", "n_pred", "n_gold"], "units": units}
    gold_per = np.zeros(len(units), dtype=np.int64)
    for s, _ in gold:
        gold_per[index[unit_of[s]]] += 1
    for d, pairs in pred.items():
        counts = np.zeros((len(units), 3), dtype=np.int64)
        counts[:, 2] = gold_per
        for s, t in pairs:
            i = index[unit_of[s]]
            counts[i, 1] += 1
            counts[i, 0] += (s, t) in gold
        out[d] = counts.tolist()
    return out


def xsim_error_rate(
    x: np.ndarray, y: np.ndarray, margin: str = "absolute", k: int = 4, neighbourhood: str = "mean"
) -> float:
    """xsim: fraction of line-aligned sources whose best target (by margin, all candidates) is not their own."""
    if len(x) != len(y):
        raise ValueError(f"xsim needs line-aligned sets, got {len(x)} and {len(y)} rows")
    if len(x) == 0:
        return 0.0
    s = MineSettings(margin=margin, neighbourhood=neighbourhood, k=k, retrieval=("forward",))
    s.validate()
    best = mine(x, y, s)
    return float(np.mean(best.fwd_best != np.arange(len(x))))


def read_gold(path: str | Path) -> set[tuple[str, str]]:
    """Gold alignments: TSV with header `src_id<TAB>tgt_id`; deduplicated."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    if not lines or lines[0].split("\t")[:2] != ["src_id", "tgt_id"]:
        raise InputError(f"{path}:1: expected header 'src_id<TAB>tgt_id'")
    gold = set()
    for n, line in enumerate(lines[1:], start=2):
        parts = line.split("\t")
        if len(parts) != 2 or not all(parts):
            raise InputError(f"{path}:{n}: expected 'src_id<TAB>tgt_id', got {line!r}")
        gold.add((parts[0], parts[1]))
    return gold
