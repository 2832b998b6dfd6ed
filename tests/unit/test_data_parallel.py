"""Line-aligned parallel files: plain and NLPC (BOM, `#` headers, empty lines at matching positions); the real
NLPC files: tests/realdata/test_data_parallel_real.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from lem.cli import command
from lem.data.parallel import read_parallel

main = command("data")


def test_nlpc_fixture(tmp_path: Path) -> None:
    (tmp_path / "en.txt").write_bytes("\ufeff#Corpus\n#Line Count : 3\n#V1\nOne \n\nTwo\tthree\n".encode())
    (tmp_path / "ta.txt").write_bytes("\ufeff#Corpus\n#Line Count : 3\n#V1\nஒன்று\n\nஇரண்டு\n".encode())
    pairs, stats = read_parallel(tmp_path / "en.txt", tmp_path / "ta.txt", "nlpc")
    assert pairs == [("One", "ஒன்று"), ("Two three", "இரண்டு")]
    assert stats["bom"] == 2 and stats["header_lines"] == 6 and stats["empty_both"] == 1
    out = tmp_path / "p.tsv"
    assert main(["lines", "--src", str(tmp_path / "en.txt"), "--tgt", str(tmp_path / "ta.txt"),
                 "--format", "nlpc", "--out", str(out)]) == 0  # fmt: skip
    assert out.read_text(encoding="utf-8") == "One\tஒன்று\nTwo three\tஇரண்டு\n"


def test_unequal_lengths_name_both_files(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("x\ny\n")
    (tmp_path / "b").write_text("x\n")
    with pytest.raises(ValueError, match="not line-aligned"):
        read_parallel(tmp_path / "a", tmp_path / "b")
