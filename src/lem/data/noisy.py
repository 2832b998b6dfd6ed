"""The noisy parallel corpus that `lem curate rank` ranks: `src<TAB>tgt[<TAB>label]` with a header line.

Read here (not in `lem.curate`, which needs torch) so that the leakage guard, which runs before any
training job, reads every curation corpus with the same checks and a malformed one fails early.
"""

from __future__ import annotations

from pathlib import Path

from lem.core.inputs import MAX_LINE_CHARS, InputError, long_line_message, read_lines, shown

NOISY_HEADERS = (["src", "tgt"], ["src", "tgt", "label"])


def read_noisy(path: str | Path) -> tuple[list[str], list[str], list[str] | None]:
    """Read `src<TAB>tgt[<TAB>label]` with a header line (a BOM and CRLF accepted); a line that is not UTF-8,
    holds a NUL byte, has another field count than the header, or is longer than MAX_LINE_CHARS characters
    fails naming the file and the line (`lem.core.inputs.InputError`), as does a corpus without pairs. The
    corpus is an evaluation set: nothing is dropped."""
    src, tgt, labels = [], [], []
    lines = read_lines(path)
    header = lines[0].split("\t") if lines else None
    if header not in NOISY_HEADERS:
        got = "an empty file" if header is None else shown(lines[0])
        raise InputError(f"{path}:1: expected the header 'src<TAB>tgt[<TAB>label]', got {got}")
    for lineno, line in enumerate(lines[1:], start=2):
        if len(line) > MAX_LINE_CHARS:
            raise InputError(long_line_message(path, lineno, line))
        row = line.split("\t")
        if len(row) != len(header):
            raise InputError(
                f"{path}:{lineno}: expected {len(header)} tab-separated fields as in the header, got "
                f"{len(row)}: {shown(line)}"
            )
        src.append(row[0])
        tgt.append(row[1])
        if len(row) == 3:
            labels.append(row[2])
    if not src:
        raise InputError(f"{path}: expected 'src<TAB>tgt[<TAB>label]' rows after the header, got none")
    return src, tgt, (labels if len(header) == 3 else None)
