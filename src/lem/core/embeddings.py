"""The embedding files shared by the stages that write and read them (`lem embed`, `lem reference`, `lem
mine`, `lem curate`): the prepared sentence file (`id<TAB>doc<TAB>text`) and the embedding layout (`E.npy`,
`E.ids.txt`, `E.meta.json`; docs/contracts.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lem.core.files import atomic_path, write_json
from lem.core.inputs import InputError


@dataclass
class Sentences:
    ids: list[str]
    docs: list[str]
    texts: list[str]


def read_sentences(path: str | Path) -> Sentences:
    """Prepared evaluation sentences: TSV with header `id<TAB>doc<TAB>text` (the doc column may be absent)."""
    lines = Path(path).read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    header = lines[0].rstrip("\r").split("\t") if lines else []
    if header not in (["id", "doc", "text"], ["id", "text"]):
        raise InputError(f"{path}:1: expected header 'id<TAB>doc<TAB>text' (or 'id<TAB>text'), got {header}")
    ncol = len(header)
    out = Sentences([], [], [])
    for n, line in enumerate(lines[1:], start=2):
        parts = line.rstrip("\r").split("\t")
        if len(parts) != ncol or not parts[0]:
            raise InputError(
                f"{path}:{n}: expected {ncol} tab-separated columns {header} with an id, got {line!r}"
            )
        out.ids.append(parts[0])
        out.docs.append(parts[1] if ncol == 3 else "")
        out.texts.append(parts[-1])
    return out


def write_embeddings(
    out_npy: str | Path,
    emb: np.ndarray,
    ids: Sequence[str],
    meta: dict[str, Any],
    out_ids: str | Path | None = None,
    out_meta: str | Path | None = None,
) -> None:
    """The embedding layout, each file atomically: `E.npy` (float32 rows in file order), `E.ids.txt` (one id
    per row) and `E.meta.json` (how they were made); `out_ids`/`out_meta` override the sibling paths."""
    stem = str(out_npy)[: -len(".npy")]
    with atomic_path(out_npy) as tmp:
        with open(tmp, "wb") as f:
            np.save(f, np.asarray(emb, dtype=np.float32))
    with atomic_path(out_ids or stem + ".ids.txt") as tmp:
        tmp.write_text("".join(i + "\n" for i in ids), encoding="utf-8")
    write_json(out_meta or stem + ".meta.json", meta)


def load_embeddings(emb_path: str | Path, ids: Sequence[str], sents_path: str | Path) -> np.ndarray:
    """Embeddings (memory-mapped), checked against the sentence file's row count and ids."""
    e = np.load(emb_path, mmap_mode="r", allow_pickle=False)
    if e.ndim != 2 or len(e) != len(ids):
        raise InputError(
            f"{emb_path}: expected {len(ids)} rows (one per sentence of {sents_path}), got shape {e.shape}"
        )
    ids_path = Path(str(emb_path)[: -len(".npy")] + ".ids.txt") if str(emb_path).endswith(".npy") else None
    if ids_path is not None and ids_path.exists():
        got = ids_path.read_text(encoding="utf-8").splitlines()
        for n, (a, b) in enumerate(zip(got, ids, strict=False), start=1):
            if a != b:
                raise InputError(f"{ids_path}:{n}: id {a!r} differs from {b!r} in {sents_path}")
    return np.asarray(e, dtype=np.float32)
