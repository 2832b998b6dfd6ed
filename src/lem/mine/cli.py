"""`lem mine run`: mine one evaluation set's sentence pairs from two embedding files and score them."""

from __future__ import annotations

import argparse
import logging
import time
from typing import Any

from lem.core.embeddings import load_embeddings, read_sentences
from lem.core.files import atomic_path, with_keys, write_json
from lem.core.stage import Stage, Verb, arg
from lem.mine.chance import candidate_groups, mining_ceiling, mining_chance_analytic
from lem.mine.evaluate import prf, read_gold, unit_counts
from lem.mine.margin import mine_corpus

log = logging.getLogger("lem.mine")


def cmd_run(a: argparse.Namespace) -> None:
    t0 = time.perf_counter()
    settings = a.settings
    src, tgt = read_sentences(a.src_sents), read_sentences(a.tgt_sents)
    x = load_embeddings(a.src_emb, src.ids, a.src_sents)
    y = load_embeddings(a.tgt_emb, tgt.ids, a.tgt_sents)
    gold = read_gold(a.gold)
    res = mine_corpus(x, y, src.ids, tgt.ids, src.docs, tgt.docs, settings)
    metrics: dict[str, Any] = {}
    mined = {d: {(s, t) for s, t, _ in pairs} for d, pairs in res.pairs.items()}
    for d, pairs in mined.items():
        metrics[d] = prf(pairs, gold)
    # where the values stand: what a system that knows nothing scores, and the best any system can
    # reach under the same candidate structure (lem.mine.chance)
    groups, n_gold = candidate_groups(src.ids, tgt.ids, src.docs, tgt.docs, gold, settings.per_document)
    chance = mining_chance_analytic(groups, n_gold, retrieval=tuple(res.pairs), settings=settings)
    ceiling = mining_ceiling(src.ids, tgt.ids, src.docs, tgt.docs, gold, settings.per_document)
    metrics.update(settings=settings.to_dict(), n_docs=res.n_docs, n_src=len(x), n_tgt=len(y))
    metrics.update(chance=chance, ceiling=ceiling)
    # per-unit counts for the report's resampling of test items: documents, or sentences when there are none
    # or one (a retrieval set, lem.data.retrieval, is one document: its sentences are its test items)
    by_doc = res.n_docs > 1
    unit_of = {i: (doc or i) if by_doc else i for i, doc in zip(src.ids, src.docs, strict=True)}
    metrics["units"] = {"kind": "document" if by_doc else "sentence", **unit_counts(mined, gold, unit_of)}
    with atomic_path(a.out_pairs) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write("direction\tsrc_id\ttgt_id\tscore\n")
            for d in settings.retrieval:
                for s, t, sc in res.pairs[d]:
                    f.write(f"{d}\t{s}\t{t}\t{sc:.6f}\n")
    write_json(a.out_metrics, with_keys(metrics, a.keys))
    m = metrics
    log.info(
        "mine: %d src, %d tgt, %d docs, gold %d; F1 fwd %.3f bwd %.3f int %.3f; %.1fs",
        len(x), len(y), res.n_docs, len(gold), m["forward"]["f1"], m["backward"]["f1"], m["intersection"]["f1"],
        time.perf_counter() - t0,
    )  # fmt: skip


STAGE = Stage(
    "mine",
    __doc__.splitlines()[0],
    (
        Verb("run", "margin-based mining of an evaluation set and its P/R/F1 against the gold links", cmd_run, (
            arg("--src-emb", required=True),
            arg("--src-sents", required=True),
            arg("--tgt-emb", required=True),
            arg("--tgt-sents", required=True),
            arg("--gold", required=True),
            arg("--out-pairs", required=True),
            arg("--out-metrics", required=True),
        ), settings="lem.mine.settings:MineSettings", keys=True),
    ),
)  # fmt: skip
