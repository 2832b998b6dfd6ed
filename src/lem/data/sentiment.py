"""Sentence-classification datasets (CSV/TSV) into seeded, stratified train/valid/test splits.

The CMCS code-mixed sentiment CSV has no official split, a row-index first column, duplicate texts and a
rare `Conflict` label; the column names, label mapping and split are settings so a user's own file fits.

The file is read with the `csv` module (quoted fields may hold the delimiter and line breaks): a BOM and
CRLF are accepted; text that is not UTF-8 or holds a NUL byte, a missing or repeated column name, a row
whose field count differs from the header's, or broken quoting fails naming the file and the line
(`lem.core.inputs.InputError`). Rows with an empty text or label, a text of more than
`lem.core.inputs.MAX_LINE_CHARS` characters, dropped labels and duplicates are dropped and counted in
`stats.json`; a file left with no row or with one class only (macro-F1 is then 1.0 whatever the model), or
too few rows to put one in each split of a non-zero share, fails. Labels are compared case-sensitively: two
labels that differ only in case (`positive` beside `Positive`) fail naming a line of each unless `label_map`
maps both (its rule merges them), as does a `drop_labels` entry matching a label only in another case.
"""

from __future__ import annotations

import csv
import io
import logging
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lem.core.files import atomic_path, write_json
from lem.core.inputs import MAX_LINE_CHARS, InputError, read_text
from lem.core.settings import Settings, SettingsError

log = logging.getLogger(__name__)

SPLITS = ("train", "valid", "test")


@dataclass
class SentimentDataSettings(Settings):
    SECTION = "sentiment settings"

    text_column: str = "Sentence"
    label_column: str = "Sentiment"
    label_map: dict[str, str | None] | None = None  # None keeps labels; a label mapped to null is dropped
    drop_labels: list[str] = field(default_factory=list)  # dropped after mapping (e.g. ["Conflict"])
    train: float = 0.8
    valid: float = 0.1
    test: float = 0.1
    seed: int = 13
    dedupe: bool = True  # a repeated text is kept once, so it lands in one split only
    delimiter: str | None = None  # None: "\t" for .tsv/.tab, "," otherwise

    def validate(self) -> None:
        s = self
        total = s.train + s.valid + s.test
        if min(s.train, s.valid, s.test) < 0 or abs(total - 1.0) > 1e-6:
            raise SettingsError(
                f"sentiment settings: train/valid/test must be >= 0 and sum to 1, got {total}"
            )
        if s.delimiter is not None and (len(s.delimiter) != 1 or s.delimiter in '"\r\n'):
            raise SettingsError(
                f"sentiment settings: delimiter must be one character (not a quote or line break) or null, got "
                f"{s.delimiter!r}"
            )
        if s.text_column == s.label_column:
            raise SettingsError(
                f"sentiment settings: text_column and label_column are both {s.text_column!r}"
            )


def read_labelled(
    path: str | os.PathLike, settings: SentimentDataSettings
) -> tuple[list[tuple[str, str]], Counter]:
    """(text, label) rows after mapping, dropping and deduplication, with the counts of what was removed."""
    path = Path(path)
    sep = settings.delimiter or ("\t" if path.suffix.lower() in (".tsv", ".tab") else ",")
    records = read_table(path, sep)
    header = records[0][1]
    cols = []
    for col in (settings.text_column, settings.label_column):
        if header.count(col) != 1:
            got = "no" if col not in header else "a repeated"
            raise InputError(
                f"{path}:1: expected a column {col!r}, got {got} one; columns are {str(header)[:300]}"
            )
        cols.append(header.index(col))
    counts: Counter[str] = Counter()
    pairs = [(lineno, row[cols[0]], " ".join(row[cols[1]].split())) for lineno, row in records[1:]]
    if settings.label_map is not None:
        unknown = sorted({label for _, _, label in pairs} - set(settings.label_map))
        if unknown:
            raise InputError(f"{path}: labels {unknown} are not in label_map {sorted(settings.label_map)}")
    _refuse_case_variants(path, pairs, settings)
    rows: list[tuple[str, str]] = []
    for lineno, text, label in pairs:
        if len(text) > MAX_LINE_CHARS:
            counts["too_long_texts_dropped"] += 1
            log.warning("%s:%d: a text of %d characters (dropped)", path, lineno, len(text))
            continue
        text = " ".join(text.split())  # tabs/newlines inside a comment would break the TSV outputs
        if settings.label_map is not None:
            mapped = settings.label_map[label]
            if mapped is None:
                counts[f"dropped_label_{label}"] += 1
                continue
            label = mapped
        if label in settings.drop_labels:
            counts[f"dropped_label_{label}"] += 1
            continue
        if not text or not label:
            counts["empty_text_or_label"] += 1
            continue
        rows.append((text, label))
    if settings.dedupe:
        labels_of: dict[str, set[str]] = {}
        for text, label in rows:
            labels_of.setdefault(text, set()).add(label)
        kept: list[tuple[str, str]] = []
        seen: set[str] = set()
        for text, label in rows:
            if len(labels_of[text]) > 1:  # the same text with two labels: no way to know which is right
                counts["duplicate_conflicting_labels_dropped"] += 1
                continue
            if text in seen:
                counts["duplicate_texts_dropped"] += 1
                continue
            seen.add(text)
            kept.append((text, label))
        rows = kept
    counts["rows_in"] = len(records) - 1
    return rows, counts


def _refuse_case_variants(
    path: Path, pairs: list[tuple[int, str, str]], settings: SentimentDataSettings
) -> None:
    """Labels are compared case-sensitively (`label_map`, `drop_labels` and the classes), so two labels that
    differ only in case would be two classes (`positive` beside `Positive`: a one-row class of its own):
    refused, naming a line of each, unless `label_map` maps both (it merges them by name). A `drop_labels`
    entry that matches no label but one in another case (`conflict` for `Conflict`) is refused likewise."""
    first: dict[str, int] = {}
    for lineno, _, label in pairs:
        first.setdefault(label, lineno)
    mapped = set(settings.label_map or ())
    by_fold: dict[str, list[str]] = {}
    for label in first:
        if label and label not in mapped:
            by_fold.setdefault(label.casefold(), []).append(label)
    for variants in by_fold.values():
        if len(variants) > 1:
            a, b = variants[:2]
            raise InputError(
                f"{path}:{first[b]}: label {b!r} differs from {a!r} (line {first[a]}) only in case: expected one "
                f"spelling per class (labels are compared case-sensitively); merge them with label_map, e.g. "
                f"{{{a}: {a}, {b}: {a}}}, or fix the file"
            )
    present = set(first) | {v for v in (settings.label_map or {}).values() if v}
    for drop in settings.drop_labels:
        near = sorted(x for x in present if x.casefold() == drop.casefold() and x != drop)
        if drop not in present and near:
            where = f" (line {first[near[0]]})" if near[0] in first else " (a label_map value)"
            raise InputError(
                f"{path}: drop_labels has {drop!r}, but the label is {near[0]!r}{where}: expected the label "
                "as written (labels are compared case-sensitively)"
            )


def read_table(path: Path, sep: str) -> list[tuple[int, list[str]]]:
    """(line, fields) of every non-blank record of a delimited file, the header first; every record has the
    header's field count."""
    reader = csv.reader(io.StringIO(read_text(path), newline=""), delimiter=sep)
    records: list[tuple[int, list[str]]] = []
    start = 1
    try:
        for row in reader:
            if row and (len(row) > 1 or row[0].strip()):  # a blank line is no record
                if records and len(row) != len(records[0][1]):
                    raise InputError(
                        f"{path}:{start}: expected {len(records[0][1])} fields separated by {sep!r} as in the "
                        f"header, got {len(row)}"
                    )
                records.append((start, row))
            start = reader.line_num + 1
    except csv.Error as err:  # broken quoting, a field past csv.field_size_limit()
        raise InputError(f"{path}:{start}: expected {sep!r}-separated fields ({err})") from None
    if not records:
        raise InputError(f"{path}: expected a header line and labelled rows, got an empty file")
    return records


def stratified_split(labels: list[str], fractions: tuple[float, float, float], seed: int) -> list[str]:
    """Split name of each row: per label, a seeded shuffle cut at the cumulative fractions."""
    rng = np.random.default_rng(seed)
    out = [""] * len(labels)
    for label in sorted(set(labels)):
        idx = np.array([i for i, lab in enumerate(labels) if lab == label])
        rng.shuffle(idx)
        n = len(idx)
        n_train = int(round(n * fractions[0]))
        n_valid = int(round(n * fractions[1]))
        if fractions[2] > 0 and n_train + n_valid >= n and n >= 3:
            n_train = n - n_valid - 1  # keep every class in test when it has a few rows
        for k, i in enumerate(idx):
            out[i] = "train" if k < n_train else "valid" if k < n_train + n_valid else "test"
    return out


def prepare_sentiment(
    path: str | os.PathLike, settings: SentimentDataSettings, out_dir: str | os.PathLike
) -> dict[str, Any]:
    """Write `{train,valid,test}.tsv` (header `text<TAB>label`) and `stats.json`; return the stats."""
    started = time.monotonic()
    rows, counts = read_labelled(path, settings)
    if not rows:
        raise InputError(
            f"{path}: expected labelled rows, got none left after mapping/dropping ({dict(counts)})"
        )
    classes = sorted({lab for _, lab in rows})
    if len(classes) < 2:
        raise InputError(
            f"{path}: expected at least two classes, got only {classes[0]!r} in the {len(rows)} rows left after "
            f"label_map / drop_labels ({dict(counts)}): a one-class set scores macro-F1 1.0 whatever the model"
        )
    fractions = (settings.train, settings.valid, settings.test)
    splits = stratified_split([lab for _, lab in rows], fractions, settings.seed)
    out_dir = Path(out_dir)
    parts = {name: [r for r, s in zip(rows, splits, strict=True) if s == name] for name in SPLITS}
    for (name, part), share in zip(parts.items(), fractions, strict=True):
        if share > 0 and not part:
            raise InputError(
                f"{path}: {len(rows)} rows leave the {name} split empty (its share {share:g}); expected more "
                "rows (or that split's share 0)"
            )
    sizes: dict[str, dict[str, int]] = {}
    for name, part in parts.items():
        sizes[name] = dict(sorted(Counter(lab for _, lab in part).items()))
        with atomic_path(out_dir / f"{name}.tsv") as tmp:
            with open(tmp, "w", encoding="utf-8", newline="\n") as f:
                f.write("text\tlabel\n")
                f.writelines(f"{t}\t{lab}\n" for t, lab in part)
    stats = {
        "input": str(path),
        "rows_in": counts.pop("rows_in"),
        "rows_kept": len(rows),
        "removed": dict(sorted(counts.items())),
        "splits": sizes,
        "settings": settings.__dict__,
    }
    write_json(out_dir / "stats.json", stats)
    log.info(
        "sentiment %s: %d rows -> %d kept (%s); split %s; %.1fs",
        path,
        stats["rows_in"],
        len(rows),
        stats["removed"],
        {k: sum(v.values()) for k, v in sizes.items()},
        time.monotonic() - started,
    )
    return stats
