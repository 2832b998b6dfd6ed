"""The curation task end to end on a shrunken embedded default, in a temporary folder: the corpus prepared
into the embed stage's layout, ranked by each variant from each pre-training seed's embeddings, the top
shares selected, NMT trained (with the pre-training seed) and scored (BLEU, chrF with sacrebleu signatures)
for each variant, a reference encoder, the oracle and random rankings and no_filter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def tiny_config() -> dict:
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    cfg["languages"], cfg["pairs"], cfg["variants"] = ["si", "en"], ["si-en"], ["base", "mlm_tlm"]
    cfg["corpus"]["generate"].update(
        mono_sentences=300, para_train=200, para_valid=30, news_documents=6, sentiment_examples=200,
        noisy_pairs=80,
    )  # fmt: skip
    cfg["tokenizer"]["vocab_size"] = 600
    cfg["base_model"]["model"].update(hidden_size=32, intermediate_size=64)
    cfg["base_model"]["training"]["epochs"] = 1
    for stage in ("mono", "para"):
        cfg["pretrain"]["stages"][stage]["epochs"] = {"default": 1}
    cfg["pretrain"]["max_length"] = cfg["embedding"]["max_length"] = 48
    cfg["sentiment"]["training"]["max_length"] = 48  # at most the scratch model's positions
    cfg["ner_model"]["settings"]["max_length"] = 48
    cfg["mining"]["evalsets"]["news_gen"]["pairs"] = ["si-en"]
    cfg["curation"]["corpora"] = {"si-en": cfg["curation"]["corpora"]["si-en"]}
    cfg["pretrain"]["seeds"] = [13, 14]
    cfg["curation"]["nmt"]["settings"].update(
        vocab_size=300, hidden=32, heads=2, ffn=64, max_steps=12, evaluations=1, bootstrap_samples=50
    )
    return cfg


def test_curation_ranks_selects_trains_and_scores_on_every_seed(tmp_path, tiny_sentence_transformer):
    cfg = tiny_config()
    # a reference encoder (a tiny local sentence-transformers model) is one more ranking row
    cfg["reference_encoders"] = {
        "tiny": {"settings": {"backend": "sentence_transformers", "model": str(tiny_sentence_transformer),
                              "device": "cpu"}}
    }  # fmt: skip
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
    targets = [
        "results/curation/base/seed13/si-en/metrics.json",
        "results/nmt/mlm_tlm/seed14/si-en/keep0.25/metrics.json",
        "results/nmt/random/seed13/si-en/keep0.5/metrics.json",
        "results/nmt/oracle/seed14/si-en/keep0.5/metrics.json",
        "results/nmt/no_filter/seed13/si-en/keep1/metrics.json",
        "results/nmt/ref_tiny/seed13/si-en/keep0.5/metrics.json",
    ]
    cmd = [sys.executable, "-m", "snakemake", *targets, "--cores", "2", "--snakefile", str(REPO / "Snakefile"),
           "--directory", str(tmp_path), "--configfile", str(tmp_path / "config.yaml")]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
    if proc.returncode != 0:
        logs = "\n".join(
            f"--- {p}\n{p.read_text()[-2000:]}" for p in sorted((tmp_path / "logs").rglob("*.log"))
        )
        pytest.fail(f"workflow failed:\n{(proc.stdout + proc.stderr)[-5000:]}\n{logs[-10000:]}")
    results = tmp_path / "results"
    # the embed stage wrote the curation corpus of each variant and seed; curation read it with mining's margin
    for variant, seed in (("base", "13"), ("mlm_tlm", "14")):
        for lang in ("si", "en"):
            assert (results / f"embeddings/{variant}/seed{seed}/curation/si-en/{lang}.npy").exists()
    cur = json.loads((results / "curation/base/seed13/si-en/metrics.json").read_text())
    assert cur["margin"] == {"k": 4, "margin": "ratio", "neighbourhood": "pooled"}
    assert cur["keys"] == {
        "task": "curation",
        "variant": "base",
        "dataset": "noisy",
        "pair": "si-en",
        "seed": "13",
    }
    n = json.loads((results / "eval/prepared/curation/si-en/stats.json").read_text())["kept"]
    for row, seed, share, kept in [("mlm_tlm", "14", "0.25", round(0.25 * n)), ("random", "13", "0.5", round(0.5 * n)),
                                   ("oracle", "14", "0.5", round(0.5 * n)), ("no_filter", "13", "1", n)]:  # fmt: skip
        m = json.loads((results / f"nmt/{row}/seed{seed}/si-en/keep{share}/metrics.json").read_text())
        assert m["keys"] == {
            "task": "nmt",
            "variant": row,
            "dataset": "curation",
            "pair": "si-en",
            "share": share,
            "seed": seed,
        }
        assert m["settings"]["seed"] == int(seed)  # each seed's NMT is its own replicate
        assert m["n_train"] == kept and m["n_test"] == 200 and 0 <= m["bleu"] <= 100 and 0 <= m["chrf"] <= 100
        assert m["signatures"]["bleu"].startswith("nrefs:1|") and "chrF" not in m["signatures"]["bleu"]
    oracle = (results / "curation/oracle/seed14/si-en/scores.tsv").read_text().splitlines()[1:]
    labels = [line.split("\t")[-1] for line in oracle]
    clean = labels.count("clean")
    assert clean and labels[:clean] == ["clean"] * clean  # clean pairs first
    ref = json.loads((results / "nmt/ref_tiny/seed13/si-en/keep0.5/metrics.json").read_text())
    assert ref["keys"]["variant"] == "ref_tiny" and ref["n_train"] == round(0.5 * n)
    assert (results / "embeddings/ref_tiny/seed13/curation/si-en/si.npy").exists()
    assert not (
        results / "embeddings/ref_tiny/seed14"
    ).exists()  # a reference encoder has no pre-training seed
