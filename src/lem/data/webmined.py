"""The curation corpus as `lem curate rank` reads it: a noisy parallel corpus prepared once per pair.

Sources: a `src<TAB>tgt[<TAB>label]` TSV with a header (the embedded default's generated corpus), or two
line-aligned files (OPUS moses releases of CCMatrix, CCAligned, NLLB: `CCMatrix.en-si.si` and
`CCMatrix.en-si.en`, unpacked by the download layer). Both are streamed line by line: at most `max_pairs`
pairs are kept (the cap on pairs read: reading stops there), exact duplicates (after `lem.data.leakage.normalise`
of both sides) and pairs with an empty side are dropped, and so is every pair one of whose sides is a
sentence of an evaluation set (the leakage guard: FLoRes, the NMT test sets, the mining and sentiment sets).
Memory is bounded by the cap: one 16-byte digest per kept pair and the evaluation sentences.

Before any model sees the corpus, `FilterSettings` (config `curation.filters`) drops the noise that embedding
similarity cannot see or even rewards, as web-mined corpora are filtered in practice before scoring: a pair
whose two sides are the same text (an untranslated copy is its own nearest neighbour) and a pair where either
side is not written in its language's script (a translation into a third language is as close as the right
one: a multilingual encoder is built to ignore the language). What is left is what the ranking is about.

Writes `pairs.tsv` (`src<TAB>tgt[<TAB>label]`, header), one sentence file per language in the prepared
evaluation layout (`id<TAB>text`, ids `c0`, `c1`, ... the row of `pairs.tsv`: what the embed stage reads) and
`stats.json` (counts of everything dropped).
"""

from __future__ import annotations

import hashlib
import os
import unicodedata
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import zip_longest
from pathlib import Path
from typing import Any

from lem.core.files import atomic_path, write_json
from lem.core.inputs import MAX_LINE_CHARS, InputError, decode, long_line_message, shown
from lem.core.settings import Settings, SettingsError
from lem.data.download import sha256_file
from lem.data.leakage import normalise, read_eval_sentences
from lem.data.noisy import NOISY_HEADERS

SCRIPTS = {"en": "LATIN", "si": "SINHALA", "ta": "TAMIL"}  # language -> the first word of its letters' names


@dataclass
class FilterSettings(Settings):
    """The rule-based filters of `lem curate prepare` (config `curation.filters`)."""

    SECTION = "curation filters"

    identical: bool = True  # drop a pair whose sides are the same text after normalisation
    script_share: float = 0.5  # drop a pair where a side has less than this share of letters in its script
    scripts: dict[str, str] = field(default_factory=lambda: dict(SCRIPTS))  # a language not listed: no check

    def validate(self) -> None:
        s = self
        share = s.script_share
        if not 0 <= share <= 1:
            raise SettingsError(
                f"curation filters: script_share={share!r}: expected a share in [0, 1] (0: no script check)"
            )
        if not all(v.isalpha() and v.isupper() for v in s.scripts.values()):
            raise SettingsError(
                f"curation filters: scripts={s.scripts!r}: expected language -> the upper-case first word of "
                "its letters' Unicode names (LATIN, SINHALA, TAMIL, DEVANAGARI, ...)"
            )


@lru_cache(maxsize=65536)
def _script(ch: str) -> str:
    return unicodedata.name(ch, "?").split(" ", 1)[0]


def script_share(text: str, script: str) -> float | None:
    """The share of `text`'s letters whose Unicode name starts with `script` (None: no letter at all).
    Letters include combining marks: the vowel signs and virama of Sinhala and Tamil are half their text."""
    letters = [c for c in text if c.isalpha() or unicodedata.category(c).startswith("M")]
    if not letters:
        return None
    return sum(_script(c) == script for c in letters) / len(letters)


def filter_reason(a: str, b: str, ka: str, kb: str, langs: tuple[str, str], f: FilterSettings) -> str | None:
    """Why the pair (a, b) (normalised ka, kb) is dropped by the filters, or None when it is kept."""
    if f.identical and ka == kb:
        return "identical"
    if f.script_share > 0:
        for text, lang in ((a, langs[0]), (b, langs[1])):
            script = f.scripts.get(lang)
            share = script_share(text, script) if script else None
            if share is not None and share < f.script_share:
                return "script"
    return None


def _lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """(line number, text) of a UTF-8 file, streamed (a BOM and CRLF accepted)."""
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            text = decode(raw, f"{path}:{lineno}")
            if lineno == 1:
                text = text.removeprefix("\ufeff")
            text = text.rstrip("\n").rstrip("\r")
            if len(text) > MAX_LINE_CHARS:
                raise InputError(long_line_message(path, lineno, text))
            yield lineno, text


def stream_tsv(path: str | os.PathLike) -> tuple[bool, Iterator[tuple[str, str, str | None]]]:
    """(has labels, rows) of a `src<TAB>tgt[<TAB>label]` TSV with a header line."""
    lines = _lines(path)
    first = next(lines, None)
    header = first[1].split("\t") if first else None
    if header not in NOISY_HEADERS:
        got = "an empty file" if first is None else shown(first[1])
        raise InputError(f"{path}:1: expected the header 'src<TAB>tgt[<TAB>label]', got {got}")

    def rows() -> Iterator[tuple[str, str, str | None]]:
        for lineno, line in lines:
            row = line.split("\t")
            if len(row) != len(header):
                raise InputError(
                    f"{path}:{lineno}: expected {len(header)} tab-separated fields as in the header, got "
                    f"{len(row)}: {shown(line)}"
                )
            yield row[0], row[1], (row[2] if len(row) == 3 else None)

    return len(header) == 3, rows()


def stream_aligned(src: str | os.PathLike, tgt: str | os.PathLike) -> Iterator[tuple[str, str, None]]:
    """Rows of two line-aligned files; a file that ends before the other fails naming both."""
    # zip_longest, not zip: zip reads a line of `src` before it finds `tgt` ended, and that line (one more
    # in `src` than in `tgt`) would be lost without a word, every pair after it read as aligned
    for x, y in zip_longest(_lines(src), _lines(tgt)):
        if x is None or y is None:
            (n, _), longer, other = (y, tgt, src) if x is None else (x, src, tgt)
            raise InputError(
                f"{longer}:{n}: more lines than its line-aligned partner {other} ({n - 1} lines)"
            )
        if "\t" in x[1] or "\t" in y[1]:
            raise InputError(f"{src}:{x[0]}: a tab inside a sentence of a line-aligned file")
        yield x[1], y[1], None


def kept_pairs(rows, langs: tuple[str, str], banned: set[str], filters: FilterSettings, counts: Counter[str],
               max_pairs: int | None) -> Iterator[tuple[str, str, str | None]]:  # fmt: skip
    """The pairs of `rows` kept, stripped: none empty, leaked (a side in `banned`), filtered or repeated (after
    `lem.data.leakage.normalise`); reading stops at `max_pairs` kept. What is read, dropped and kept is
    counted in `counts`."""
    seen: set[bytes] = set()
    kept = 0
    for a, b, label in rows:
        counts["read"] += 1
        a, b = a.strip(), b.strip()
        ka, kb = normalise(a), normalise(b)
        if not ka or not kb:
            counts["dropped_empty"] += 1
            continue
        if ka in banned or kb in banned:
            counts["dropped_leakage"] += 1
            continue
        reason = filter_reason(a, b, ka, kb, langs, filters)
        if reason is not None:
            counts[f"dropped_{reason}"] += 1
            if label is not None:
                counts[f"dropped_{reason}_{label}"] += 1
            continue
        digest = hashlib.blake2b(f"{ka}\t{kb}".encode(), digest_size=16).digest()
        if digest in seen:
            counts["dropped_duplicate"] += 1
            continue
        seen.add(digest)
        yield a, b, label
        kept += 1
        if label is not None:
            counts[f"kept_{label}"] += 1
        if max_pairs is not None and kept >= max_pairs:
            counts["stopped_at_cap"] = 1
            return


def write_prepared(out_dir: Path, langs: tuple[str, str], labelled: bool, pairs) -> int:
    """`pairs.tsv` and one sentence file per language (ids `c<row>`), atomically; the pairs written."""
    src_lang, tgt_lang = langs
    with (
        atomic_path(out_dir / "pairs.tsv") as t_pairs,
        atomic_path(out_dir / f"{src_lang}.tsv") as t_src,
        atomic_path(out_dir / f"{tgt_lang}.tsv") as t_tgt,
    ):
        with (
            open(t_pairs, "w", encoding="utf-8", newline="\n") as f_pairs,
            open(t_src, "w", encoding="utf-8", newline="\n") as f_src,
            open(t_tgt, "w", encoding="utf-8", newline="\n") as f_tgt,
        ):
            f_pairs.write("src\ttgt\tlabel\n" if labelled else "src\ttgt\n")
            f_src.write("id\ttext\n")
            f_tgt.write("id\ttext\n")
            kept = 0
            for a, b, label in pairs:
                f_pairs.write(f"{a}\t{b}\t{label}\n" if labelled else f"{a}\t{b}\n")
                f_src.write(f"c{kept}\t{a}\n")
                f_tgt.write(f"c{kept}\t{b}\n")
                kept += 1
    return kept


def prepare_curation_corpus(
    pair: str,
    out_dir: str | os.PathLike,
    *,
    corpus: str | os.PathLike | None = None,
    src_file: str | os.PathLike | None = None,
    tgt_file: str | os.PathLike | None = None,
    max_pairs: int | None = None,
    exclude: Sequence[str | os.PathLike] = (),
    filters: FilterSettings | None = None,
) -> dict[str, Any]:
    """Stream the corpus (a TSV, or two line-aligned files), keep at most `max_pairs` distinct pairs that
    share no sentence with the `exclude` evaluation files and pass the `filters` (default: `FilterSettings()`),
    and write `pairs.tsv`, `{src}.tsv`, `{tgt}.tsv` and `stats.json` under `out_dir`."""
    if (corpus is None) == (src_file is None or tgt_file is None):
        raise ValueError("curation corpus: give a TSV corpus or both line-aligned files (src and tgt)")
    if max_pairs is not None and (isinstance(max_pairs, bool) or max_pairs < 1):
        raise ValueError(f"curation corpus: max_pairs={max_pairs!r}: expected an integer >= 1 or none")
    src_lang, tgt_lang = pair.split("-")
    filters = FilterSettings() if filters is None else filters
    banned = {normalise(s) for path in exclude for s in read_eval_sentences(path)}
    banned.discard("")
    if corpus is not None:
        labelled, rows = stream_tsv(corpus)
    else:
        labelled, rows = False, stream_aligned(src_file, tgt_file)
    counts: Counter[str] = Counter()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    pairs = kept_pairs(rows, (src_lang, tgt_lang), banned, filters, counts, max_pairs)
    kept = write_prepared(out_dir, (src_lang, tgt_lang), labelled, pairs)
    if not kept:
        raise InputError(
            f"{corpus or src_file}: no pair left after dropping empty, duplicate and leaked pairs and the "
            f"filters ({counts.get('dropped_identical', 0)} identical, {counts.get('dropped_script', 0)} in "
            "another script: curation.filters)"
        )

    sources = [corpus] if corpus is not None else [src_file, tgt_file]
    stats = {
        "pair": pair,
        "source": [str(p) for p in sources],
        "source_sha256": {str(p): sha256_file(p) for p in sources},  # what was read (sources without a pin)
        "max_pairs": max_pairs,
        "kept": kept,
        "evaluation_sentences": len(banned),
        "excluded_files": [str(p) for p in exclude],
        "filters": {
            "identical": filters.identical,
            "script_share": filters.script_share,
            "scripts": {lang: filters.scripts.get(lang) for lang in (src_lang, tgt_lang)},
        },
        **dict(sorted(counts.items())),
    }
    write_json(out_dir / "stats.json", stats)
    return stats


def prepare_test_set(
    out: str | os.PathLike,
    *,
    corpus: str | os.PathLike | None = None,
    src_file: str | os.PathLike | None = None,
    tgt_file: str | os.PathLike | None = None,
) -> int:
    """An NMT test (or validation) set as `src<TAB>tgt` with a header: from a TSV, or from two line-aligned
    files (FLoRes-200 `devtest/sin_Sinh.devtest` ...). Nothing is dropped: a test set is scored whole."""
    rows = stream_tsv(corpus)[1] if corpus is not None else stream_aligned(src_file, tgt_file)
    n = 0
    with atomic_path(out) as tmp, open(tmp, "w", encoding="utf-8", newline="\n") as fh:
        fh.write("src\ttgt\n")
        for a, b, _ in rows:
            fh.write(f"{a}\t{b}\n")
            n += 1
    if not n:
        raise InputError(f"{corpus or src_file}: an empty test set")
    return n
