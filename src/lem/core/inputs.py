"""Input files that a config names: one error type and the checks every loader shares.

A loader of a user's file (a corpus, a pair file, an evaluation set, a lexicon, a sentiment CSV, a noisy
corpus) decodes it with `decode` / `read_text`, so every such file:

- has its UTF-8 BOM dropped and may use CRLF line endings;
- that is not UTF-8 fails naming the file, the 1-based line and the offending byte;
- that holds a NUL byte (a binary file) fails likewise;
- with a line longer than `MAX_LINE_CHARS` (a file without line breaks, a CR-only file, a pasted blob)
  is either refused (`<file>:<line>: expected ...`) or, where the loader's policy drops defective lines,
  drops it and counts it (`too_long_lines`).

Failures raise `InputError`, a `ValueError` whose message is one line: `<file>:<line>: expected <what>,
got <what>`, or `<file>: ...` for a problem of the whole file (empty, no usable line, sides of unequal
length). `lem.annotate.readers.ReaderError` is an `InputError`. The `lem data` verbs and `lem curate rank`
print it as one line and exit 1. Only `OSError` (a missing or unreadable file) and `InputError` leave a
loader.
"""

from __future__ import annotations

import os
from pathlib import Path

MAX_LINE_CHARS = 10_000  # longer than any sentence: a line past it is a defect, not text
BOM = b"\xef\xbb\xbf"


class InputError(ValueError):
    """A malformed or unusable input file: the message names the file (and the 1-based line) and what was
    expected."""


def where(path: str | os.PathLike, lineno: int | None = None) -> str:
    return f"{path}:{lineno}" if lineno is not None else str(path)


def shown(text: str, n: int = 80) -> str:
    """`text` shortened for a message: its repr, cut at `n` characters, with the length when cut."""
    if len(text) <= n:
        return repr(text)
    return f"{text[:n]!r}... ({len(text):,} characters)"


def decode(raw: bytes, path: str | os.PathLike) -> str:
    """`raw` as UTF-8 text (a leading BOM dropped); InputError naming the line of a byte that is not UTF-8
    or of a NUL byte."""
    if raw.startswith(BOM):
        raw = raw[len(BOM) :]
    nul = raw.find(b"\x00")  # UTF-8 has no 0x00 byte but the NUL character
    if nul >= 0:
        lineno = raw.count(b"\n", 0, nul) + 1
        raise InputError(f"{path}:{lineno}: expected text, got a NUL byte (a binary file?)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        lineno = raw.count(b"\n", 0, err.start) + 1
        column = err.start - (raw.rfind(b"\n", 0, err.start) + 1) + 1
        raise InputError(
            f"{path}:{lineno}: expected UTF-8 text, got byte 0x{raw[err.start]:02x} at byte {column} of the "
            "line (convert the file to UTF-8)"
        ) from None
    return text


def read_text(path: str | os.PathLike) -> str:
    """The text of a UTF-8 file (see `decode`); OSError when it cannot be read."""
    return decode(Path(path).read_bytes(), path)


def split_lines(text: str) -> list[str]:
    """Lines of `text` split at `\\n` only (a CR-only file stays one long line), each with its `\\r`
    stripped; a final newline ends the last line rather than starting an empty one."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.rstrip("\r") for line in lines]


def read_lines(path: str | os.PathLike) -> list[str]:
    """`split_lines(read_text(path))`."""
    return split_lines(read_text(path))


def too_long(line: str, limit: int = MAX_LINE_CHARS) -> bool:
    return len(line) > limit


def long_line_message(path: str | os.PathLike, lineno: int, line: str, limit: int = MAX_LINE_CHARS) -> str:
    return (
        f"{path}:{lineno}: expected a line of at most {limit:,} characters, got {len(line):,} "
        "(a file without line breaks?)"
    )
