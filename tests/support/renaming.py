"""Sinhala declared as `xx`: the renaming of texts, paths and configs that the renamed-language tests share
(tests/unit/test_language_rename.py, tests/dag/test_language_rename_dag.py)."""

from __future__ import annotations

import re
from pathlib import Path

SI = re.compile(r"(?<![A-Za-z])si(?![A-Za-z])")


def to_xx(text: str) -> str:
    """`text` with the code `si` renamed `xx` (paths, pairs, ids, keys) and Sinhala's news folder its code."""
    return SI.sub("xx", text).replace("Sinhala", "xx")


def renamed(node):
    """A config (or any YAML value) with every `si` renamed `xx`."""
    if isinstance(node, dict):
        return {renamed(k): renamed(v) for k, v in node.items()}
    if isinstance(node, list):
        return [renamed(v) for v in node]
    return to_xx(node) if isinstance(node, str) else node


def declared_as_xx(cfg: dict) -> dict:
    """`cfg` with Sinhala declared as `xx`: every key and value renamed, and what the library knows of `si`
    by default said in the config (the generated world's language, its tag set, its script)."""
    new = renamed(cfg)
    new["corpus"]["generate"]["languages"] = {"xx": "si"}
    new["annotation"]["xx"]["pos"]["tagset"] = "ucsc"
    new["curation"]["filters"]["scripts"] = {"en": "LATIN", "xx": "SINHALA", "ta": "TAMIL"}
    return new


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
