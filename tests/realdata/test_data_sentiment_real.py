"""Sentiment preparation of the real code-mixed si-en set of ../shared/data (CMCS). On small fixtures:
tests/unit/test_data_sentiment.py."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from lem.cli import command

main = command("data")


def test_real_cmcs(shared_data: Path, tmp_path: Path) -> None:
    csv = shared_data / "cmcs-si-en-sentiment" / "sentence-level-annotation.csv"
    settings = json.dumps({"label_map": {"Positive": "Positive", "Negative": "Negative", "Neutral": "Neutral",
                                         "Conflict": None}})  # fmt: skip
    assert main(["sentiment", "--input", str(csv), "--settings", settings, "--out-dir", str(tmp_path)]) == 0
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["rows_in"] == 13518
    assert stats["removed"] == {"dropped_label_Conflict": 124, "duplicate_conflicting_labels_dropped": 2,
                                "duplicate_texts_dropped": 6}  # fmt: skip
    total = Counter()
    for split in stats["splits"].values():
        total.update(split)
    assert total == {"Neutral": 8591, "Negative": 3641, "Positive": 1154} and stats["rows_kept"] == 13386
    assert stats["splits"]["test"] == {"Negative": 364, "Neutral": 859, "Positive": 116}
    header = (tmp_path / "valid.tsv").read_text(encoding="utf-8").splitlines()[0]
    assert header == "text\tlabel"
