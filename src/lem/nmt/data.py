"""NMT's pairs: `src<TAB>tgt` TSVs, line-aligned test sets (FLoRes-200), direction flips."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from lem.core.inputs import InputError, long_line_message, read_lines, shown, too_long
from lem.core.stage import UsageError
from lem.nmt.settings import FLORES_CODES

log = logging.getLogger("lem.nmt")


PAIR_HEADERS = (["src", "tgt"], ["src", "tgt", "label"])
Pair = tuple[str, str]


# --- reading pairs ------------------------------------------------------------------------------------------


def read_pairs(path: str | os.PathLike, *, drop_empty: bool = True) -> list[Pair]:
    """Pairs of a `src<TAB>tgt` TSV, with or without a header `src<TAB>tgt[<TAB>label]` (a label column is
    read past). A pair with an empty side is dropped (`drop_empty`, training data) or refused (test sets).
    Malformed lines fail naming the file and the line (`lem.core.inputs.InputError`)."""
    lines = read_lines(path)
    if not lines:
        raise InputError(f"{path}: expected src<TAB>tgt rows, got an empty file")
    first = lines[0].split("\t")
    header = first if first in PAIR_HEADERS else None
    width = len(header) if header else 2
    pairs: list[Pair] = []
    dropped = 0
    for lineno, line in enumerate(lines[1 if header else 0 :], start=2 if header else 1):
        if too_long(line):
            raise InputError(long_line_message(path, lineno, line))
        row = line.split("\t")
        if len(row) != width:
            expected = f"{width} tab-separated fields" + (" as in the header" if header else " (src, tgt)")
            raise InputError(f"{path}:{lineno}: expected {expected}, got {len(row)}: {shown(line)}")
        src, tgt = row[0].strip(), row[1].strip()
        if not src or not tgt:
            if drop_empty:
                dropped += 1
                continue
            raise InputError(f"{path}:{lineno}: expected a sentence on both sides, got {shown(line)}")
        pairs.append((src, tgt))
    if not pairs:
        raise InputError(f"{path}: expected src<TAB>tgt rows with text on both sides, got none")
    if dropped:
        log.info("%s: dropped %d pairs with an empty side, kept %d", path, dropped, len(pairs))
    return pairs


def read_parallel_lines(src_path: str | os.PathLike, tgt_path: str | os.PathLike) -> list[Pair]:
    """Pairs of two line-aligned files, one sentence per line (FLoRes-200 `devtest/<code>.devtest`)."""
    sides = []
    for path in (src_path, tgt_path):
        lines = read_lines(path)
        for lineno, line in enumerate(lines, start=1):
            if too_long(line):
                raise InputError(long_line_message(path, lineno, line))
            if not line.strip():
                raise InputError(f"{path}:{lineno}: expected a sentence, got an empty line")
        if not lines:
            raise InputError(f"{path}: expected one sentence per line, got an empty file")
        sides.append([line.strip() for line in lines])
    if len(sides[0]) != len(sides[1]):
        raise InputError(
            f"{src_path}: {len(sides[0])} lines, {tgt_path}: {len(sides[1])} lines: expected line-aligned files"
        )
    return list(zip(sides[0], sides[1], strict=True))


def flores_files(flores_dir: str | os.PathLike, src: str, tgt: str, split: str = "devtest",
                 codes: Mapping[str, str] = FLORES_CODES) -> tuple[Path, Path]:  # fmt: skip
    """The FLoRes-200 files of languages `src` and `tgt` (en, si, ta): `<dir>/<split>/<code>.<split>`."""
    root = Path(flores_dir)
    return tuple(root / split / f"{codes[lang]}.{split}" for lang in (src, tgt))  # type: ignore[return-value]


def read_test_set(test: str | os.PathLike | Sequence[str | os.PathLike]) -> list[Pair]:
    """A test set: a `src<TAB>tgt` TSV path, or a (source file, target file) pair of line-aligned files."""
    if isinstance(test, (str, os.PathLike)):
        return read_pairs(test, drop_empty=False)
    if len(test) != 2:
        raise UsageError(f"nmt: test set {test!r}: expected a TSV path or two line-aligned files")
    return read_parallel_lines(test[0], test[1])


def flip(pairs: Sequence[Pair]) -> list[Pair]:
    return [(b, a) for a, b in pairs]
