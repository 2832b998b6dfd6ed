"""Metrics writers put the `--keys` they are given into their file, for the report to read."""

from __future__ import annotations

import json
import platform

import numpy as np
import pytest

from lem.cli import command
from lem.core.files import metrics_keys, with_keys

annotate_main = command("annotate")


def test_keys_come_first_and_leave_the_metrics_unchanged():
    metrics = {"macro_f1": 0.5, "accuracy": 0.7}
    keys = metrics_keys({"task": "sentiment", "pair": "ta-en", "seed": "1"})
    written = with_keys(metrics, keys)
    assert list(written) == ["keys", "macro_f1", "accuracy", "provenance"]
    assert {k: written[k] for k in ("keys", "macro_f1", "accuracy")} == {"keys": keys, **metrics}
    assert list(with_keys(metrics, metrics_keys(None))) == ["macro_f1", "accuracy", "provenance"]
    versions = written["provenance"]["versions"]
    assert versions["python"] == platform.python_version()
    assert versions["numpy"] == np.__version__ and versions["lem-pipeline"]


def score_args(tmp_path, lang="en", out="m.json"):
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
    pred = str(tmp_path / "p.parquet")
    run = ["run", "--lang", "en", "--input", str(tmp_path / "in.txt"), "--settings", json.dumps(settings)]
    assert annotate_main([*run, "--out", pred]) == 0
    keys = json.dumps({"task": "annotation", "dataset": "configured", "pair": lang})
    return ["score", "--pred", pred, "--gold", str(tmp_path / "g.conll"), "--lang", lang, "--keys", keys,
            "--out", str(tmp_path / out)]  # fmt: skip


def test_metrics_record_the_sha256_of_the_settings_the_job_received(tmp_path):
    """The config hash of a metrics file: the same arguments give the same hash (and the same bytes), other
    arguments another; `--threads` is a resource, left out."""
    import hashlib

    args = score_args(tmp_path)
    assert annotate_main(args) == 0
    first = (tmp_path / "m.json").read_bytes()
    prov = json.loads(first)["provenance"]
    expected = hashlib.sha256(json.dumps(["lem annotate score", *args], separators=(",", ":")).encode())
    assert prov["command"] == "lem annotate score" and prov["settings_sha256"] == expected.hexdigest()
    assert annotate_main(args) == 0
    assert (tmp_path / "m.json").read_bytes() == first  # nothing wall-clock: byte-identical
    other = [*args[:6], "si", *args[7:]]  # --lang si
    assert annotate_main(other) == 0
    assert (
        json.loads((tmp_path / "m.json").read_text())["provenance"]["settings_sha256"]
        != prov["settings_sha256"]
    )
    from lem.core.files import record_job_settings, run_provenance

    record_job_settings("lem x y", ["y", "--threads", "4", "--a", "1"])
    with_threads = run_provenance()["settings_sha256"]
    record_job_settings("lem x y", ["y", "--a", "1"])
    assert run_provenance()["settings_sha256"] == with_threads


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
