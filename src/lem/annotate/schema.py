"""The word-level annotation format every backend produces (docs/contracts.md, "annotate").

One row per input line: `sent_id, text, words, starts, ends, pos, coarse, ner, flags`; the coarse classes,
NER labels and flag bits (1 = NE: NER label not O and the word is not a number, 2 = NOUN, 4 = VERB) are
those of `lem.core.entities`. The schema metadata records the tag set of the `pos` column (`lem.pos_tagset`) and
the language (`lem.lang`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from lem.core.files import atomic_path
from lem.core.inputs import InputError

SCHEMA = pa.schema(
    [
        ("sent_id", pa.int64()),
        ("text", pa.string()),
        ("words", pa.list_(pa.string())),
        ("starts", pa.list_(pa.int32())),
        ("ends", pa.list_(pa.int32())),
        ("pos", pa.list_(pa.string())),
        ("coarse", pa.list_(pa.string())),
        ("ner", pa.list_(pa.string())),
        ("flags", pa.list_(pa.uint8())),
    ]
)


@dataclass
class Annotated:
    """One annotated sentence."""

    sent_id: int
    text: str
    words: list[str]
    starts: list[int]
    ends: list[int]
    pos: list[str]
    coarse: list[str]
    ner: list[str]
    flags: list[int]


def annotation_schema(pos_tagset: str | None = None, lang: str | None = None) -> pa.Schema:
    """SCHEMA with the tag set of the `pos` column and the language in its metadata."""
    meta = {}
    if pos_tagset:
        meta[b"lem.pos_tagset"] = pos_tagset.encode()
    if lang:
        meta[b"lem.lang"] = lang.encode()
    return SCHEMA.with_metadata(meta) if meta else SCHEMA


def pos_tagset_of(table: pa.Table) -> str | None:
    """The tag set of an annotation table's `pos` column (None for a file written before it was recorded)."""
    value = (table.schema.metadata or {}).get(b"lem.pos_tagset")
    return value.decode() if value else None


def to_table(rows: list[Annotated], schema: pa.Schema = SCHEMA) -> pa.Table:
    cols = {name: [getattr(r, name) for r in rows] for name in schema.names}
    return pa.Table.from_pydict(cols, schema=schema)


def write_annotations(
    path: str | os.PathLike, rows: list[Annotated], pos_tagset: str | None = None, lang: str | None = None
) -> None:
    """Write the Parquet file atomically (all rows at once; `lem.annotate.run.annotate_file` streams)."""
    schema = annotation_schema(pos_tagset, lang)
    with atomic_path(path) as tmp:
        pq.write_table(to_table(rows, schema), tmp)


def read_annotations(path: str | os.PathLike) -> pa.Table:
    table = pq.read_table(path)
    if table.schema.names != SCHEMA.names:
        raise InputError(f"{path}: expected columns {SCHEMA.names}, got {table.schema.names}")
    return table
