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

A JSON file a stage wrote and another reads (a metrics file: `lem report build`) is read with `read_json`: invalid
JSON (a truncated file) fails naming the file, the line and column and what was expected; a value of the wrong
type fails likewise at the value's own line and column (`json_type_error`, `json_position`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

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


def read_json(path: str | os.PathLike, what: str) -> tuple[Any, str]:
    """The value of a JSON file and its text; InputError `<file>:<line>:<column>: expected <what>, got invalid
    JSON (<why>)` for a file that is not JSON (truncated, empty), naming the line of a byte that is not UTF-8."""
    text = read_text(path)
    try:
        return json.loads(text), text
    except json.JSONDecodeError as err:
        why = err.msg.removesuffix(" starting at")
        cut = why.startswith("Unterminated") or err.pos >= len(text.rstrip())
        got = (
            "an empty file" if not text.strip() else f"invalid JSON ({why}{': the file is cut short' * cut})"
        )
        raise InputError(f"{path}:{err.lineno}:{err.colno}: expected {what}, got {got}") from None


_WHITESPACE = re.compile(r"[ \t\n\r]*")


def json_position(text: str, keys: Sequence[str | int]) -> tuple[int, int] | None:
    """The 1-based line and column where the value at `keys` (object keys and list indices) starts in the JSON
    `text` (valid JSON: read by `read_json`), as `json.loads` reads it (a repeated key: its last value); None
    when there is no such value."""
    decoder = json.JSONDecoder()
    at = _WHITESPACE.match(text, 0).end()
    for key in keys:
        opening, closing = ("{", "}") if isinstance(key, str) else ("[", "]")
        if text[at : at + 1] != opening:
            return None
        found, index = None, 0
        at = _WHITESPACE.match(text, at + 1).end()
        while text[at] != closing:
            if isinstance(key, str):
                name, at = json.decoder.scanstring(text, at + 1)
                at = _WHITESPACE.match(text, at).end() + 1  # past the colon
                at = _WHITESPACE.match(text, at).end()
                if name == key:
                    found = at
            elif index == key:
                found = at
            _, at = decoder.raw_decode(text, at)
            index += 1
            at = _WHITESPACE.match(text, at).end()
            if text[at] == ",":
                at = _WHITESPACE.match(text, at + 1).end()
        if found is None:
            return None
        at = found
    return text.count("\n", 0, at) + 1, at - (text.rfind("\n", 0, at) + 1) + 1


def json_shown(value: Any) -> str:
    """A JSON value described for a message: its kind, and the value when short."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {json.dumps(value)}"
    if isinstance(value, str):
        return f"the string {shown(value, 40)}"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, list):
        return f"a list of {len(value)} item{'s' * (len(value) != 1)}"
    return f"an object with {len(value)} key{'s' * (len(value) != 1)}"


def json_key(keys: Sequence[str | int]) -> str:
    """`keys` as one name: `units.intersection[3]`."""
    out = ""
    for key in keys:
        out += f"[{key}]" if isinstance(key, int) else f".{key}" if out else key
    return out


def json_type_error(
    path: str | os.PathLike, text: str, keys: Sequence[str | int], expected: str, value: Any
) -> InputError:
    """`<file>:<line>:<column>: expected `<key>` to be <expected>, got <value>`, at the value's place in `text`."""
    place = json_position(text, keys)
    at = f"{path}:{place[0]}:{place[1]}" if place else str(path)
    return InputError(f"{at}: expected `{json_key(keys)}` to be {expected}, got {json_shown(value)}")
