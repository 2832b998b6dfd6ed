"""The curation task end to end on the shared shrunken DAG (tests/support/dag.py, `dag_reference`): the corpus
prepared into the embed stage's layout, ranked by each variant from each pre-training seed's embeddings, the top
share selected, NMT trained (with the pre-training seed) and scored (BLEU, chrF with sacrebleu signatures)
for each variant, a reference encoder (a tiny local sentence-transformers model, row `ref_tiny`), the oracle
and random rankings and no_filter."""

from __future__ import annotations

import json
from pathlib import Path

from lem.nmt.settings import training_seed


def test_curation_ranks_selects_trains_and_scores_on_every_seed(dag_reference: Path):
    results = dag_reference / "results"
    # the embed stage wrote the curation corpus of each variant and seed; curation read it with mining's margin
    for variant, seed in (("base", "1"), ("mlm_tlm", "2")):
        for lang in ("si", "en"):
            assert (results / f"embeddings/{variant}/seed{seed}/curation/si-en/{lang}.npy").exists()
    cur = json.loads((results / "curation/base/seed1/si-en/metrics.json").read_text())
    assert cur["margin"] == {"k": 4, "margin": "ratio", "neighbourhood": "pooled"}
    assert cur["keys"] == {
        "task": "curation",
        "variant": "base",
        "dataset": "noisy",
        "pair": "si-en",
        "seed": "1",
    }
    n = json.loads((results / "eval/prepared/curation/si-en/stats.json").read_text())["kept"]
    for row, seed, share, kept in [("mlm_tlm", "2", "0.5", round(0.5 * n)), ("random", "1", "0.5", round(0.5 * n)),
                                   ("oracle", "2", "0.5", round(0.5 * n)), ("no_filter", "1", "1", n)]:  # fmt: skip
        m = json.loads((results / f"nmt/{row}/seed{seed}/si-en/keep{share}/metrics.json").read_text())
        assert m["keys"] == {
            "task": "nmt",
            "variant": row,
            "dataset": "curation",
            "pair": "si-en",
            "share": share,
            "seed": seed,
        }
        # each seed's NMT is its own replicate, trained with a seed of its own: never the ranking's seed
        assert m["settings"]["seed"] == training_seed(int(seed), 13) != int(seed)
        assert m["n_train"] == kept and m["n_test"] == 200 and 0 <= m["bleu"] <= 100 and 0 <= m["chrf"] <= 100
        assert m["signatures"]["bleu"].startswith("nrefs:1|") and "chrF" not in m["signatures"]["bleu"]
    oracle = (results / "curation/oracle/seed2/si-en/scores.tsv").read_text().splitlines()[1:]
    labels = [line.split("\t")[-1] for line in oracle]
    clean = labels.count("clean")
    assert clean and labels[:clean] == ["clean"] * clean  # clean pairs first
    ref = json.loads((results / "nmt/ref_tiny/seed1/si-en/keep0.5/metrics.json").read_text())
    assert ref["keys"]["variant"] == "ref_tiny" and ref["n_train"] == round(0.5 * n)
    assert (results / "embeddings/ref_tiny/seed1/curation/si-en/si.npy").exists()
    assert not (
        results / "embeddings/ref_tiny/seed2"
    ).exists()  # a reference encoder has no pre-training seed
