"""Line-aligned parallel files (FLoRes/Tatoeba style, NLPC government corpora) into `src<TAB>tgt` pairs,
monolingual text files and `src<TAB>tgt` pair files: the `corpus.source: files` inputs.

The NLPC format: UTF-8 with a BOM, `#` header lines at the top of both files, empty lines at matching
positions. Both formats: CRLF, leading/trailing spaces, inner tabs; a pair with an empty side is dropped.
Text that is not UTF-8 or holds a NUL byte fails naming the file and line (`lem.core.inputs`); lines of more
than `lem.core.inputs.MAX_LINE_CHARS` characters are dropped and counted (`too_long`) in text and line-aligned
files and refused in pair files; a file (or a set of pair files) that leaves no sentence fails naming it,
so no stage ever trains on an empty language or pair.
"""

from __future__ import annotations

import logging
import os
import random
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lem.core.files import atomic_path
from lem.core.inputs import MAX_LINE_CHARS, InputError, decode, long_line_message, shown, split_lines
from lem.data.leakage import normalise

log = logging.getLogger(__name__)

FORMATS = ("plain", "nlpc")


def read_lines(path: str | os.PathLike, fmt: str, counts: Counter[str]) -> list[str]:
    """Lines of one side: BOM dropped, line endings stripped; `nlpc` also drops the leading `#` header block."""
    raw = Path(path).read_bytes()
    if raw.startswith(b"\xef\xbb\xbf"):
        counts["bom"] += 1
    if b"\r\n" in raw:
        counts["crlf_files"] += 1
    lines = split_lines(decode(raw, path))
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
        raise InputError(f"{src} has {len(a)} lines but {tgt} has {len(b)} (after headers): not line-aligned")
    pairs: list[tuple[str, str]] = []
    for x, y in zip(a, b, strict=True):
        if len(x) > MAX_LINE_CHARS or len(y) > MAX_LINE_CHARS:
            counts["too_long"] += 1
            continue
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
    if not pairs:
        raise InputError(
            f"{src} | {tgt}: expected line-aligned sentences, got no pair with two sides ({stats})"
        )
    log.info("lines %s | %s (%s): %s; %.1fs", src, tgt, fmt, stats, time.monotonic() - started)
    return pairs, stats


def write_pairs(pairs: list[tuple[str, str]], out: str | os.PathLike) -> None:
    """`src<TAB>tgt` per line, no header (the corpus para format)."""
    with atomic_path(out) as tmp:
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            f.writelines(f"{x}\t{y}\n" for x, y in pairs)


def read_mono(path: str | os.PathLike) -> tuple[list[str], dict[str, int]]:
    """Sentences of a one-sentence-per-line file: BOM, CRLF and edge/inner whitespace cleaned, empty lines
    and lines of more than MAX_LINE_CHARS characters dropped and counted; a file left with no sentence fails
    naming it."""
    counts: Counter[str] = Counter()
    lines = read_lines(path, "plain", counts)
    out = []
    for lineno, line in enumerate(lines, 1):
        if len(line) > MAX_LINE_CHARS:
            if not counts["too_long"]:
                log.warning(
                    "%s (dropped; later ones are only counted)", long_line_message(path, lineno, line)
                )
            counts["too_long"] += 1
            continue
        clean = " ".join(line.split())
        if not clean:
            counts["empty"] += 1
            continue
        out.append(clean)
    stats = {"lines": len(lines), "sentences": len(out), **dict(sorted(counts.items()))}
    if not out:
        raise InputError(f"{path}: expected one sentence per line, got no sentence ({stats})")
    log.info("mono %s: %s", path, stats)
    return out, stats


def read_mono_files(
    paths: str | os.PathLike | Sequence[str | os.PathLike],
) -> tuple[list[str], dict[str, Any]]:
    """Sentences of one or more one-sentence-per-line files (`corpus.files.mono.<lang>`: a path or a list),
    each read by `read_mono` (a file left with no sentence fails naming it), concatenated in the order
    given, duplicates kept as in one file; the stats summed, with each file's under `files`."""
    paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    if not paths:
        raise InputError("mono text: expected at least one file, got none")
    out: list[str] = []
    total: Counter[str] = Counter()
    per_file = {}
    for path in paths:
        sents, stats = read_mono(path)
        out.extend(sents)
        total.update(stats)
        per_file[str(path)] = stats
    return out, {**dict(sorted(total.items())), "files": per_file}


def write_lines(lines: list[str], out: str | os.PathLike) -> None:
    with atomic_path(out) as tmp:
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            f.writelines(f"{x}\n" for x in lines)


def read_pairs_tsv(path: str | os.PathLike) -> list[tuple[str, str]]:
    """A header-less `src<TAB>tgt` file; a line without exactly two non-empty fields, or longer than
    MAX_LINE_CHARS characters, is an error naming the file and the line (an empty file gives no pairs: the
    callers decide)."""
    pairs = []
    for lineno, line in enumerate(split_lines(decode(Path(path).read_bytes(), path)), start=1):
        if len(line) > MAX_LINE_CHARS:
            raise InputError(long_line_message(path, lineno, line))
        fields = line.split("\t")
        if len(fields) != 2 or not fields[0].strip() or not fields[1].strip():
            raise InputError(
                f"{path}:{lineno}: expected 'source<TAB>target' (two non-empty fields), got {shown(line)}"
            )
        pairs.append((" ".join(fields[0].split()), " ".join(fields[1].split())))
    return pairs


def merge_and_split(
    inputs: list[str | os.PathLike], valid_size: int, seed: int
) -> tuple[list[tuple[str, str]], list[tuple[str, str]], dict[str, int]]:
    """Concatenate pair files, drop exact duplicate pairs, and hold out a seeded validation sample."""
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
    if not pairs:
        raise InputError(f"{', '.join(map(str, inputs))}: expected 'source<TAB>target' lines, got no pair")
    if valid_size >= len(pairs):
        raise InputError(
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


def given_valid_split(
    inputs: list[str | os.PathLike], valid_inputs: list[str | os.PathLike]
) -> tuple[list[tuple[str, str]], list[tuple[str, str]], dict[str, int]]:
    """Training pairs (merged, deduplicated) and the given validation pairs less those that repeat a training
    pair (compared after `lem.data.leakage.normalise` of both sides): the best checkpoint is chosen on
    validation loss, which a repeated pair turns into training loss. What was dropped is counted and logged;
    a validation set left empty fails naming its files."""
    train, _, stats = merge_and_split(inputs, 0, 0)
    named = ", ".join(map(str, valid_inputs))
    given = [p for path in valid_inputs for p in read_pairs_tsv(path)]
    if not given:
        raise InputError(f"{named}: expected validation 'source<TAB>target' lines, got no pair")
    seen = {(normalise(a), normalise(b)) for a, b in train}
    valid = [(a, b) for a, b in given if (normalise(a), normalise(b)) not in seen]
    repeated = len(given) - len(valid)
    if not valid:
        raise InputError(
            f"{named}: every one of the {len(given)} validation pairs repeats a training pair; expected "
            "validation pairs held out of training"
        )
    if repeated:
        log.warning(
            "%s: %d of %d validation pairs repeat a training pair: dropped from valid (checkpoint selection "
            "must not read training data)",
            named,
            repeated,
            len(given),
        )
    stats.update(valid=len(valid), valid_given=len(given), valid_repeating_train_dropped=repeated)
    return train, valid, stats
