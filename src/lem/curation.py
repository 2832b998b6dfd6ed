"""Parallel data curation: rank a noisy parallel corpus by the model's margin score, keep the top pairs.

Each pair (x_i, y_i) is scored with the margin of its cosine against each side's k nearest neighbours on
the other side (LASER's scoring of a given bitext, `lem.mining.pair_margin_scores`). Where the corpus
carries clean/noisy labels (the embedded default's generated corpus), the ranking is evaluated: precision
of clean pairs in the top-ranked share, for each configured share, and average precision.
"""

from __future__ import annotations

import argparse
import logging
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lem.chance import curation_chance
from lem.data.noisy import NOISY_HEADERS, read_noisy  # noqa: F401 - the corpus reader, re-exported
from lem.files import atomic_path, with_keys, write_json
from lem.settings import settings_from_dict
from lem.stage import Stage, Verb, arg

log = logging.getLogger("lem.curation")


@dataclass
class CurationSettings:
    k: int = 4  # neighbours per side of the margin, capped at the corpus size
    margin: str = "ratio"
    neighbourhood: str = "mean"
    keep_fractions: list[float] = field(default_factory=lambda: [0.25, 0.5])
    embed: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> CurationSettings:
        s = settings_from_dict(cls, d, "curation settings")
        s.validate()
        return s

    def validate(self) -> None:
        from lem.mining import MARGINS, NEIGHBOURHOODS

        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1:
            raise ValueError(f"curation settings: k={self.k!r}: expected an integer >= 1")
        if self.margin not in MARGINS:
            raise ValueError(f"curation settings: margin={self.margin!r}: expected one of {MARGINS}")
        if self.neighbourhood not in NEIGHBOURHOODS:
            raise ValueError(
                f"curation settings: neighbourhood={self.neighbourhood!r}: expected one of {NEIGHBOURHOODS}"
            )
        fractions = self.keep_fractions
        if not isinstance(fractions, list) or any(
            isinstance(f, bool) or not isinstance(f, (int, float)) or not 0 < f <= 1 for f in fractions
        ):
            raise ValueError(
                f"curation settings: keep_fractions={fractions!r}: expected shares in (0, 1] (the top share "
                "of the ranked corpus whose precision is reported)"
            )
        if len({f"{f:g}" for f in fractions}) != len(fractions):
            raise ValueError(f"curation settings: keep_fractions={fractions!r}: expected distinct shares")


def ranking_metrics(scores: np.ndarray, clean: np.ndarray, keep_fractions: list[float]) -> dict[str, Any]:
    """Precision of clean pairs among the top-scored share of the corpus, and average precision."""
    order = np.argsort(-scores, kind="stable")
    hits = clean[order].astype(np.float64)
    out: dict[str, Any] = {"n": int(len(scores)), "clean_share": float(clean.mean()) if len(clean) else 0.0}
    for f in keep_fractions:
        top = max(1, int(round(f * len(scores))))
        out[f"precision_at_{f:g}"] = float(hits[:top].mean())
    cum = np.cumsum(hits)
    ranks = np.arange(1, len(hits) + 1)
    out["average_precision"] = float((cum / ranks)[hits > 0].mean()) if hits.any() else 0.0
    return out


def curate(
    model_dir: str,
    corpus: str,
    settings: CurationSettings,
    out_scores: str,
    out_metrics: str,
    keys: dict[str, str] | None = None,
) -> dict:
    from lem.embed import EmbedSettings, encode
    from lem.mining import pair_margin_scores

    t0 = time.time()
    src, tgt, labels = read_noisy(corpus)
    emb = EmbedSettings.from_dict(settings.embed)
    x = encode(model_dir, src, emb)
    y = encode(model_dir, tgt, emb)
    scores = pair_margin_scores(
        x, y, k=settings.k, margin_kind=settings.margin, neighbourhood=settings.neighbourhood
    )
    order = np.argsort(-scores, kind="stable")
    with atomic_path(out_scores) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        fh.write("rank\tindex\tscore\tlabel\n")
        for rank, i in enumerate(order, start=1):
            fh.write(f"{rank}\t{i}\t{scores[i]:.6f}\t{labels[i] if labels else ''}\n")
    metrics: dict[str, Any] = {"corpus": str(corpus), "model": str(model_dir), "settings": settings.__dict__}
    if labels is not None:
        clean = np.array([lbl == "clean" for lbl in labels])
        metrics.update(ranking_metrics(scores, clean, settings.keep_fractions))
        metrics["chance"] = curation_chance(clean, settings.keep_fractions)  # a random ranking
        metrics["mean_score_by_label"] = {
            lbl: float(scores[np.array(labels) == lbl].mean()) for lbl in sorted(set(labels))
        }
    write_json(out_metrics, with_keys(metrics, keys))
    log.info("curated %s with %s: %d pairs in %.1fs", corpus, model_dir, len(src), time.time() - t0)
    return metrics


def cmd_rank(a: argparse.Namespace) -> None:
    curate(a.model, a.corpus, a.settings, a.out_scores, a.out_metrics, a.keys)


STAGE = Stage(
    "curate",
    __doc__.splitlines()[0],
    (
        Verb("rank", "score every pair of a noisy corpus; rank metrics where it carries labels", cmd_rank, (
            arg("--model", required=True),
            arg("--corpus", required=True, help="TSV with header src, tgt[, label]"),
            arg("--out-scores", required=True),
            arg("--out-metrics", required=True),
        ), settings=CurationSettings, keys=True, threads=True),
    ),
)  # fmt: skip
