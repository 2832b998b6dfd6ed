"""multiNER split of the real multiNER of ../shared/data. On a small fixture: tests/unit/test_data_ner.py."""

from __future__ import annotations

import json
from pathlib import Path

from lem.cli import command

main = command("data")


def test_real_multiner(shared_data: Path, tmp_path: Path) -> None:
    assert main(["multiner", "--dir", str(shared_data / "multiner"), "--out-dir", str(tmp_path)]) == 0
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["sentences"] == 3836
    assert stats["split_sizes"] == {"test": 384, "valid": 384, "train": 3067}
    assert stats["irregular_spacing_lines"] == {"en": 3, "si": 5, "ta": 2}
    for lang in ("en", "si", "ta"):
        blocks = (tmp_path / f"{lang}.test.conll").read_text(encoding="utf-8").strip("\n").split("\n\n")
        assert len(blocks) == 384 and all("\r" not in b for b in blocks)
