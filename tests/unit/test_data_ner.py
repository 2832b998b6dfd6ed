"""multiNER split: same sentence indices for all three languages, seeded, title block left out (the real
multiNER: tests/realdata/test_data_ner_real.py)."""

from __future__ import annotations

import json
from pathlib import Path

from lem.cli import command
from lem.data.ner import split_indices

main = command("data")


def test_split_indices_seeded_disjoint() -> None:
    a = split_indices(100, 0.1, 0.2, seed=5, skip=[0])
    assert a == split_indices(100, 0.1, 0.2, seed=5, skip=[0])
    assert a != split_indices(100, 0.1, 0.2, seed=6, skip=[0])
    assert (len(a["valid"]), len(a["test"]), len(a["train"])) == (10, 20, 69)
    assert sorted(a["train"] + a["valid"] + a["test"]) == list(range(1, 100))


def test_fixture_three_way(tmp_path: Path) -> None:
    for lang, word in (("English", "Colombo"), ("Sinhala", "කොළඹ"), ("Tamil", "கொழும்பு")):
        sents = "".join(f"{word}{i} B-LOC\r\nx  O\r\n\r\n" for i in range(10))  # double space: irregular
        (tmp_path / f"Final_{lang}.txt").write_text(sents, encoding="utf-8", newline="")
    out = tmp_path / "out"
    assert main(["multiner", "--dir", str(tmp_path), "--settings", '{"seed": 1, "valid": 0.2, "test": 0.2}',
                 "--out-dir", str(out)]) == 0  # fmt: skip
    stats = json.loads((out / "stats.json").read_text())
    assert stats["split_sizes"] == {"test": 2, "valid": 2, "train": 5}
    assert stats["irregular_spacing_lines"] == {"en": 10, "si": 10, "ta": 10}
    en = [b.split("\t")[0][7:] for b in (out / "en.test.conll").read_text().split("\n\n") if b]
    ta = [
        b.split("\t")[0][8:] for b in (out / "ta.test.conll").read_text(encoding="utf-8").split("\n\n") if b
    ]
    assert en == ta  # same sentence indices in every language
