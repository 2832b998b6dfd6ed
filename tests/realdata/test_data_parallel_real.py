"""Line-aligned parallel files of ../shared/data: the NLPC en-ta government corpus and the si-ta order papers.
On small fixtures: tests/unit/test_data_parallel.py."""

from __future__ import annotations

from pathlib import Path

from lem.data.parallel import read_parallel


def test_real_nlpc_en_ta(shared_data: Path) -> None:
    d = shared_data / "nlpc-en-ta-gov"
    pairs, stats = read_parallel(d / "En-Ta English.txt", d / "En-Ta Tamil.txt", "nlpc")
    assert stats["lines"] == 8946 and stats["empty_both"] == 47 and stats.get("empty_one_side", 0) == 0
    assert stats["bom"] == 2 and stats["header_lines"] == 6 and len(pairs) == 8899
    assert not pairs[0][0].startswith(("#", "\ufeff"))


def test_real_orderpapers(shared_data: Path) -> None:
    d = shared_data / "nlpc-si-ta-orderpapers"
    pairs, stats = read_parallel(d / "Sinhala.txt", d / "Tamil.txt", "plain")
    assert stats["lines"] == 1133 and stats["crlf_files"] == 2 and len(pairs) == 1133
    assert all(not x.startswith(" ") and "\r" not in y for x, y in pairs)
