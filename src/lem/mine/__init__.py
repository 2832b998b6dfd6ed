"""Margin-based bitext mining (LASER's method and the news benchmark authors' protocol) and its evaluation.

- `lem.mine.settings`: `MineSettings`, every choice of the method;
- `lem.mine.knn`: nearest neighbours both ways (the exact one-pass engine, on the CPU or a GPU; FAISS indexes);
- `lem.mine.margin`: margin scoring, best candidates, retrieval, mining per document (the method's page);
- `lem.mine.exact`: the exact speed-up of `candidates: all` (float-error bounds settle most items from their
  neighbours; the same results as a whole second pass);
- `lem.mine.evaluate`: P/R/F1 against gold links, xsim, the gold file;
- `lem.mine.cli`: `lem mine run`.
"""

from lem.mine.evaluate import prf, read_gold, xsim_error_rate
from lem.mine.knn import Neighbours, knn_both, knn_exact, knn_index, knn_torch
from lem.mine.margin import (
    Best,
    MiningResult,
    best_from_neighbours,
    best_over_all,
    mine,
    mine_corpus,
    neighbourhood_terms,
    pair_margin_scores,
    retrieve,
)
from lem.mine.settings import CANDIDATES, DEVICES, INDEXES, MARGINS, NEIGHBOURHOODS, RETRIEVALS, MineSettings

__all__ = [
    "CANDIDATES", "DEVICES", "INDEXES", "MARGINS", "NEIGHBOURHOODS", "RETRIEVALS", "Best", "MineSettings", "MiningResult",
    "Neighbours", "best_from_neighbours", "best_over_all", "knn_both", "knn_exact", "knn_index", "knn_torch", "mine",
    "mine_corpus", "neighbourhood_terms", "pair_margin_scores", "prf", "read_gold", "retrieve",
    "xsim_error_rate",
]  # fmt: skip
