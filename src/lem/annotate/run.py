"""The annotate stage: read sentences, run the configured POS and NER backends, write the Parquet format."""

from __future__ import annotations

import itertools
import logging
import os
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

import pyarrow.parquet as pq

from lem.annotate.hf_ner import HFNER
from lem.annotate.lexicon import load_gazetteer, load_pos_lexicon
from lem.annotate.readers import ReaderError
from lem.annotate.schema import Annotated, annotation_schema, to_table
from lem.annotate.settings import AnnotateSettings, TaskSettings
from lem.annotate.sinling_backend import SinlingPOS
from lem.annotate.spacy_backend import SpacyTagger
from lem.annotate.stanza_backend import StanzaTagger
from lem.core.entities import (
    ENTITY_BITS,
    LANG_CODE,
    OTHER,
    check_tagset,
    coarse_map,
    entity_flags,
    native_tagset,
)
from lem.core.files import atomic_path
from lem.core.settings import SettingsError
from lem.core.text import word_spans

# Imported inside functions: lem.annotate.crf (it loads python-crfsuite, which only the crf backend needs)

log = logging.getLogger(__name__)


def make_tagger(task: str, lang: str, s: TaskSettings, on_error: str = "raise"):
    """The backend object for one task: anything with `tag(list of word lists) -> list of tag lists`; a POS
    backend also has `tagset`, the tag set its tags belong to (penn, ucsc, upos)."""
    if s.backend == "none":
        return None
    if s.backend == "lexicon":
        if task == "ner":
            return load_gazetteer(s.path, s.format, on_error)
        # A CoNLL-U lexicon holds UPOS whatever the language; a tsv / tnt file the language's native set
        # unless the settings say otherwise.
        tagset = s.tagset or ("upos" if s.format == "conllu" else native_tagset(lang))
        return load_pos_lexicon(s.path, s.format, on_error, tagset)
    if s.backend == "sinling":
        if lang != "si":
            raise SettingsError(f"backend 'sinling' tags Sinhala only, not {lang!r}")
        return SinlingPOS()
    if s.backend == "crf":
        from lem.annotate.crf import CRFTagger

        tagger = CRFTagger(s.path)
        meta = tagger.meta
        if meta and (meta.get("task") != task or meta.get("lang") != lang):
            raise SettingsError(
                f"CRF model {s.path} tags {meta.get('task')}/{meta.get('lang')}, not {task}/{lang}"
            )
        if task == "pos":
            if tagger.tagset and s.tagset and tagger.tagset != s.tagset:
                raise SettingsError(
                    f"CRF model {s.path} emits {tagger.tagset} tags (its sidecar), but pos.tagset says {s.tagset}"
                )
            tagger.tagset = tagger.tagset or s.tagset
            if not tagger.tagset:
                raise SettingsError(
                    f"CRF model {s.path}: its sidecar does not say which tag set it emits; retrain it with "
                    "`lem annotate train-crf` or set pos.tagset"
                )
        return tagger
    if s.backend == "hf_ner":
        return HFNER(s.path, s.device, s.batch_size, s.max_length)
    if s.backend == "stanza":
        return StanzaTagger(lang, task, s.path, s.device)
    if s.backend == "spacy":
        if lang != "en":
            raise SettingsError("backend 'spacy' is for English only")
        return SpacyTagger(task, s.path)
    raise ValueError(f"unknown backend {s.backend!r}")


class Annotator:
    """POS + NER for one language with the configured backends (loaded once)."""

    def __init__(self, lang: str, settings: AnnotateSettings) -> None:
        if not LANG_CODE.fullmatch(lang):
            raise ValueError(f"language must be a language code (2 or 3 lower-case letters), got {lang!r}")
        self.lang, self.settings = lang, settings
        self.pos = make_tagger("pos", lang, settings.pos, settings.on_error)
        self.ner = make_tagger("ner", lang, settings.ner, settings.on_error)
        # The tag set the POS backend emits decides the coarse classes (UPOS NOUN read as Penn is OTHER).
        self.pos_tagset = check_tagset(
            self.pos.tagset if self.pos is not None else native_tagset(lang),
            f"POS backend {settings.pos.backend!r}",
        )
        self._coarse = coarse_map(self.pos_tagset)

    def annotate(self, texts: list[str], first_id: int = 0) -> list[Annotated]:
        spans = [word_spans(t) for t in texts]
        words = [[t[a:b] for a, b in sp] for t, sp in zip(texts, spans, strict=True)]
        pos = self.pos.tag(words) if self.pos else [[""] * len(w) for w in words]
        ner = self.ner.tag(words) if self.ner else [["O"] * len(w) for w in words]
        rows = []
        for k, (text, sp, ws, ps, ns) in enumerate(zip(texts, spans, words, pos, ner, strict=True)):
            if len(ps) != len(ws) or len(ns) != len(ws):
                raise RuntimeError(
                    f"backend returned {len(ps)} POS / {len(ns)} NER labels for {len(ws)} words"
                )
            coarse = [self._coarse.get(p, OTHER) for p in ps]
            rows.append(
                Annotated(
                    sent_id=first_id + k,
                    text=text,
                    words=ws,
                    starts=[a for a, _ in sp],
                    ends=[b for _, b in sp],
                    pos=list(ps),
                    coarse=coarse,
                    ner=list(ns),
                    flags=entity_flags(ws, coarse, ns),
                )
            )
        return rows


def iter_lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """(line number, line) of a UTF-8 file, streamed, with the BOM and CR/LF stripped as
    `readers.read_lines` does; a line that is not UTF-8 fails naming the file and the line."""
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ReaderError(f"{path}:{lineno}: expected UTF-8 text ({e})") from e
            if lineno == 1:
                line = line.removeprefix("\ufeff")
            yield lineno, line.removesuffix("\n").rstrip("\r")


def iter_sentences(
    path: str | os.PathLike,
    column: int | None = None,
    on_error: str = "raise",
    skipped: Counter | None = None,
) -> Iterator[str]:
    """One sentence per line of a `.txt`, or column `column` of a header-less TSV (column 0 of a `.tsv` by
    default), streamed. A line without that column raises (file, line) or, with on_error=skip, becomes an
    empty sentence (rows stay line-aligned) counted in `skipped`."""
    if column is None and Path(path).suffix == ".tsv":
        column = 0
    for lineno, line in iter_lines(path):
        if column is None:
            yield line.strip()
            continue
        parts = line.split("\t")
        if column >= len(parts):
            msg = f"{path}:{lineno}: expected at least {column + 1} tab-separated columns, got {len(parts)}"
            if on_error == "raise":
                raise ReaderError(msg)
            if skipped is not None:
                skipped["missing column"] += 1
            yield ""
            continue
        yield parts[column].strip()


def read_sentences(
    path: str | os.PathLike, column: int | None = None, on_error: str = "raise"
) -> tuple[list[str], Counter]:
    """Every sentence of `iter_sentences`, in a list, and the skip counts."""
    skipped: Counter = Counter()
    return list(iter_sentences(path, column, on_error, skipped)), skipped


def chunks(items: Iterable[str], size: int) -> Iterator[list[str]]:
    it = iter(items)
    while chunk := list(itertools.islice(it, size)):
        yield chunk


def annotate_file(
    lang: str,
    input: str | os.PathLike,
    out: str | os.PathLike,
    settings: AnnotateSettings,
    column: int | None = None,
) -> dict:
    """Annotate a sentence file into `out` (Parquet, atomically); returns counts and timings.

    Streams: `settings.chunk_lines` input lines are read, tagged and written as one Parquet row group at a
    time, so memory is bounded by the chunk, not the corpus (a temp file is renamed onto `out` at the end)."""
    t0 = time.perf_counter()
    annotator = Annotator(lang, settings)
    t_load = time.perf_counter() - t0
    skipped: Counter = Counter()
    flag_values: Counter = Counter()  # word flags value -> words
    n_rows = n_words = n_empty = n_chunks = max_chunk = 0
    schema = annotation_schema(annotator.pos_tagset, lang)
    sentences = iter_sentences(input, column, settings.on_error, skipped)
    with atomic_path(out) as tmp, pq.ParquetWriter(tmp, schema) as writer:
        for texts in chunks(sentences, settings.chunk_lines):
            rows = annotator.annotate(texts, first_id=n_rows)
            writer.write_table(to_table(rows, schema), row_group_size=len(rows))
            n_rows += len(rows)
            n_chunks += 1
            max_chunk = max(max_chunk, len(rows))
            for r in rows:
                n_words += len(r.words)
                n_empty += not r.words
                flag_values.update(r.flags)
            del rows
            log.info(
                "annotate %s: %d lines tagged (%.0f lines/s)",
                lang, n_rows, n_rows / max(time.perf_counter() - t0 - t_load, 1e-9),
            )  # fmt: skip
    secs = time.perf_counter() - t0 - t_load
    counts = {t: sum(n for f, n in flag_values.items() if f & bit) for t, bit in ENTITY_BITS.items()}
    stats = {
        "lang": lang,
        "sentences": n_rows,
        "words": n_words,
        "empty": n_empty,
        "skipped": dict(skipped),
        "ne_words": counts["ne"],
        "noun_words": counts["noun"],
        "verb_words": counts["verb"],
        "chunks": n_chunks,
        "max_chunk_rows": max_chunk,
        "pos_backend": settings.pos.backend,
        "pos_tagset": annotator.pos_tagset,
        "ner_backend": settings.ner.backend,
    }
    log.info(
        "annotate %s: %d sentences, %d words (NE %d, NOUN %d, VERB %d), %d empty, skipped %s, pos=%s (%s) "
        "ner=%s, %d chunks, load %.1fs, tag %.1fs -> %s",
        lang, n_rows, n_words, counts["ne"], counts["noun"], counts["verb"], n_empty, dict(skipped),
        settings.pos.backend, annotator.pos_tagset, settings.ner.backend, n_chunks, t_load, secs, out,
    )  # fmt: skip
    return stats
