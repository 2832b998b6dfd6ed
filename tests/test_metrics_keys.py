"""Metrics writers put the `--keys` they are given into their file, for the report to read."""

from __future__ import annotations

import json

import pytest

from lem.cli import command
from lem.files import metrics_keys, with_keys

annotate_main = command("annotate")


def test_keys_come_first_and_leave_the_metrics_unchanged():
    metrics = {"macro_f1": 0.5, "accuracy": 0.7}
    keys = metrics_keys({"task": "sentiment", "pair": "ta-en", "seed": "1"})
    assert with_keys(metrics, keys) == {"keys": keys, **metrics}
    assert list(with_keys(metrics, keys)) == ["keys", "macro_f1", "accuracy"]
    assert with_keys(metrics, metrics_keys(None)) is metrics


@pytest.mark.parametrize("text", ['["si-en"]', '{"seed": 1}'])
def test_keys_must_be_an_object_of_strings(text):
    with pytest.raises(ValueError, match="--keys must be a JSON object of strings"):
        metrics_keys(json.loads(text))


def test_annotate_score_writes_its_keys(tmp_path):
    (tmp_path / "pos.tsv").write_text("road\tNN\nruns\tVBZ\n", encoding="utf-8")
    (tmp_path / "ner.tsv").write_text("Galle\tLOC\n", encoding="utf-8")
    (tmp_path / "in.txt").write_text("Galle road runs.\n", encoding="utf-8")
    (tmp_path / "g.conll").write_text(
        "Galle\tNNP\tB-LOC\nroad\tNN\tO\nruns\tVBZ\tO\n.\t.\tO\n", encoding="utf-8"
    )
    settings = {
        "pos": {"backend": "lexicon", "path": str(tmp_path / "pos.tsv"), "format": "tsv"},
        "ner": {"backend": "lexicon", "path": str(tmp_path / "ner.tsv"), "format": "gazetteer_tsv"},
    }
    pred, out = str(tmp_path / "p.parquet"), tmp_path / "m.json"
    run = ["run", "--lang", "en", "--input", str(tmp_path / "in.txt"), "--settings", json.dumps(settings)]
    assert annotate_main([*run, "--out", pred]) == 0
    keys = {"task": "annotation", "dataset": "configured", "pair": "en"}
    score = ["score", "--pred", pred, "--gold", str(tmp_path / "g.conll"), "--lang", "en"]
    assert annotate_main([*score, "--keys", json.dumps(keys), "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["keys"] == keys and data["ner"]["f1"] == 1.0 and data["pos"]["coarse_accuracy"] == 0.75
