"""Leakage guard on the real corpora of ../shared/data: the NLPC en-ta government corpus overlaps multiNER's
test split, and the guard finds it. On small fixtures: tests/unit/test_data_leakage.py."""

from __future__ import annotations

import json
from pathlib import Path

from lem.cli import command

main = command("data")


def test_real_multiner_vs_nlpc_overlap(shared_data: Path, tmp_path: Path) -> None:
    """The README warns nlpc-en-ta-gov overlaps multiNER: the guard must find it."""
    d = shared_data / "nlpc-en-ta-gov"
    main(["lines", "--src", str(d / "En-Ta English.txt"), "--tgt", str(d / "En-Ta Tamil.txt"), "--format", "nlpc",
          "--out", str(tmp_path / "gov.tsv")])  # fmt: skip
    main(["multiner", "--dir", str(shared_data / "multiner"), "--out-dir", str(tmp_path / "ner")])
    main(["leakage", "--train", str(tmp_path / "gov.tsv"), "--eval", str(tmp_path / "ner" / "en.test.conll"),
          str(tmp_path / "ner" / "ta.test.conll"), "--report", str(tmp_path / "r.json")])  # fmt: skip
    r = json.loads((tmp_path / "r.json").read_text())["train"][str(tmp_path / "gov.tsv")]
    assert r["normalised_overlap"] > 0 and r["dropped"] == r["normalised_overlap"]
