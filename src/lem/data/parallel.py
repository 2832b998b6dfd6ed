"""Line-aligned parallel files (FLoRes/Tatoeba style, NLPC government corpora) into `src<TAB>tgt` pairs.

The NLPC format: UTF-8 with a BOM, `#` header lines at the top of both files, empty lines at matching
positions. Both formats: CRLF, leading/trailing spaces, inner tabs; a pair with an empty side is dropped.
"""

from __future__ import annotations

import logging
import os
import time
from collections import Counter
from pathlib import Path

from lem.files import atomic_path

log = logging.getLogger(__name__)

FORMATS = ("plain", "nlpc")


def read_lines(path: str | os.PathLike, fmt: str, counts: Counter[str]) -> list[str]:
    """Lines of one side: BOM dropped, line endings stripped; `nlpc` also drops the leading `#` header block."""
    raw = Path(path).read_bytes()
    if raw.startswith(b"\xef\xbb\xbf"):
        counts["bom"] += 1
    if b"\r\n" in raw:
        counts["crlf_files"] += 1
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not UTF-8 ({err})") from err
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # final newline
    lines = [line.rstrip("\r") for line in lines]
    if fmt == "nlpc":
        n = 0
        while n < len(lines) and lines[n].lstrip().startswith("#"):
            n += 1
        counts["header_lines"] += n
        lines = lines[n:]
    return lines


def read_parallel(
    src: str | os.PathLike, tgt: str | os.PathLike, fmt: str = "plain"
) -> tuple[list[tuple[str, str]], dict[str, int]]:
    """Aligned (src, tgt) pairs and the defect counts; unequal line counts are an error naming both files."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")
    started = time.monotonic()
    counts: Counter[str] = Counter()
    a, b = read_lines(src, fmt, counts), read_lines(tgt, fmt, counts)
    if len(a) != len(b):
        raise ValueError(f"{src} has {len(a)} lines but {tgt} has {len(b)} (after headers): not line-aligned")
    pairs: list[tuple[str, str]] = []
    for x, y in zip(a, b, strict=True):
        x2, y2 = " ".join(x.split()), " ".join(y.split())  # also removes inner tabs
        if (x2 != x.strip()) or (y2 != y.strip()):
            counts["inner_whitespace_fixed"] += 1
        if x != x.strip() or y != y.strip():
            counts["edge_whitespace_stripped"] += 1
        if not x2 and not y2:
            counts["empty_both"] += 1
            continue
        if not x2 or not y2:
            counts["empty_one_side"] += 1
            continue
        pairs.append((x2, y2))
    stats = {"lines": len(a), "pairs": len(pairs), **dict(sorted(counts.items()))}
    log.info("lines %s | %s (%s): %s; %.1fs", src, tgt, fmt, stats, time.monotonic() - started)
    return pairs, stats


def write_pairs(pairs: list[tuple[str, str]], out: str | os.PathLike) -> None:
    """`src<TAB>tgt` per line, no header (the corpus para format)."""
    with atomic_path(out) as tmp:
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            f.writelines(f"{x}\t{y}\n" for x, y in pairs)


def read_mono(path: str | os.PathLike) -> tuple[list[str], dict[str, int]]:
    """Sentences of a one-sentence-per-line file: BOM, CRLF and edge/inner whitespace cleaned, empty lines dropped."""
    counts: Counter[str] = Counter()
    lines = read_lines(path, "plain", counts)
    out = []
    for line in lines:
        clean = " ".join(line.split())
        if not clean:
            counts["empty"] += 1
            continue
        out.append(clean)
    stats = {"lines": len(lines), "sentences": len(out), **dict(sorted(counts.items()))}
    log.info("mono %s: %s", path, stats)
    return out, stats


def write_lines(lines: list[str], out: str | os.PathLike) -> None:
    with atomic_path(out) as tmp:
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            f.writelines(f"{x}\n" for x in lines)


def read_pairs_tsv(path: str | os.PathLike) -> list[tuple[str, str]]:
    """A header-less `src<TAB>tgt` file; a line without exactly two non-empty fields is an error naming it."""
    pairs = []
    with open(path, encoding="utf-8-sig", newline="") as f:
        for lineno, line in enumerate(f, start=1):
            fields = line.rstrip("\r\n").split("\t")
            if len(fields) != 2 or not fields[0].strip() or not fields[1].strip():
                raise ValueError(
                    f"{path}:{lineno}: expected 'source<TAB>target' (two non-empty fields), got {line[:80]!r}"
                )
            pairs.append((" ".join(fields[0].split()), " ".join(fields[1].split())))
    return pairs


def merge_and_split(
    inputs: list[str | os.PathLike], valid_size: int, seed: int
) -> tuple[list[tuple[str, str]], list[tuple[str, str]], dict[str, int]]:
    """Concatenate pair files, drop exact duplicate pairs, and hold out a seeded validation sample."""
    import random

    seen: set[tuple[str, str]] = set()
    pairs: list[tuple[str, str]] = []
    dup = 0
    for path in inputs:
        for pair in read_pairs_tsv(path):
            if pair in seen:
                dup += 1
                continue
            seen.add(pair)
            pairs.append(pair)
    if valid_size >= len(pairs):
        raise ValueError(
            f"valid size {valid_size} leaves no training pairs out of {len(pairs)} from {inputs}"
        )
    order = list(range(len(pairs)))
    random.Random(seed).shuffle(order)
    held = set(order[:valid_size])
    train = [p for i, p in enumerate(pairs) if i not in held]
    valid = [p for i, p in enumerate(pairs) if i in held]
    stats = {
        "inputs": len(inputs),
        "pairs": len(pairs),
        "duplicates_dropped": dup,
        "train": len(train),
        "valid": len(valid),
    }
    log.info("merged %d files: %s", len(inputs), stats)
    return train, valid, stats
