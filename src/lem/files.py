"""Atomic output writing: a failed step never leaves a half-written file behind."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary sibling path; rename it onto `path` only if the block succeeds.

    Works for files and for directories (the block creates whatever it wants at the temp path).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent)) / path.name
    try:
        yield tmp
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        os.replace(tmp, path)
    finally:
        shutil.rmtree(tmp.parent, ignore_errors=True)


def write_text(path: str | os.PathLike, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json(path: str | os.PathLike, obj: Any) -> None:
    write_text(path, json.dumps(obj, indent=2, ensure_ascii=False, sort_keys=False) + "\n")


def metrics_keys(keys: Any) -> dict[str, str] | None:
    """The parsed `--keys` argument of a metrics writer (`lem mine run`, `lem sentiment finetune`, `lem curate rank
    rank`, `lem annotate score`): a JSON object of strings naming what the file measures (`variant`, `task`,
    `dataset`, `pair`, `seed` where it applies; `docs/contracts.md`), written as the file's top-level `keys`.
    None when not given."""
    if keys is None:
        return None
    if not isinstance(keys, dict) or not all(isinstance(v, str) for v in keys.values()):
        raise ValueError(f"--keys must be a JSON object of strings, got {json.dumps(keys)}")
    return keys


def with_keys(metrics: dict[str, Any], keys: dict[str, str] | None) -> dict[str, Any]:
    """`metrics` with `keys` as its first field (unchanged when there are none)."""
    return metrics if keys is None else {"keys": keys, **metrics}


def read_json(path: str | os.PathLike) -> Any:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def content_digest(paths: list[str | os.PathLike]) -> str:
    """sha256 over what `paths` hold (every file of a folder: relative name, size and bytes), not their
    names: a model or features folder rebuilt with other content gets another digest."""
    import hashlib

    h = hashlib.sha256()
    for root in map(Path, paths):
        files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
        h.update(f"{len(files)}\0".encode())
        for f in files:
            rel = f.relative_to(root).as_posix() if root.is_dir() else f.name
            h.update(f"{rel}\0{f.stat().st_size}\0".encode())
            with open(f, "rb") as fh:
                while chunk := fh.read(1 << 20):
                    h.update(chunk)
    return h.hexdigest()
