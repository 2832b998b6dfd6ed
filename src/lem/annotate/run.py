"""The annotate stage: read sentences, run the configured POS and NER backends, write the Parquet format."""

from __future__ import annotations

import logging
import os
import time
from collections import Counter
from pathlib import Path

from lem.annotate.readers import ReaderError, read_lines
from lem.annotate.schema import Annotated, entity_flags, write_annotations
from lem.annotate.settings import AnnotateSettings, TaskSettings
from lem.annotate.tagsets import coarse_for_lang
from lem.text import word_spans

log = logging.getLogger(__name__)


def make_tagger(task: str, lang: str, s: TaskSettings, on_error: str = "raise"):
    """The backend object for one task: anything with `tag(list of word lists) -> list of tag lists`."""
    if s.backend == "none":
        return None
    if s.backend == "lexicon":
        from lem.annotate.lexicon import load_gazetteer, load_pos_lexicon

        return (
            load_pos_lexicon(s.path, s.format, on_error)
            if task == "pos"
            else load_gazetteer(s.path, s.format, on_error)
        )
    if s.backend == "sinling":
        if lang != "si":
            raise ValueError(f"backend 'sinling' tags Sinhala only, not {lang!r}")
        from lem.annotate.sinling_backend import SinlingPOS

        return SinlingPOS()
    if s.backend == "crf":
        from lem.annotate.crf import CRFTagger

        tagger = CRFTagger(s.path)
        meta = tagger.meta
        if meta and (meta.get("task") != task or meta.get("lang") != lang):
            raise ValueError(
                f"CRF model {s.path} tags {meta.get('task')}/{meta.get('lang')}, not {task}/{lang}"
            )
        return tagger
    if s.backend == "hf_ner":
        from lem.annotate.hf_ner import HFNER

        return HFNER(s.path, s.device, s.batch_size, s.max_length)
    if s.backend == "stanza":
        from lem.annotate.stanza_backend import StanzaTagger

        return StanzaTagger(lang, task, s.path, s.device)
    if s.backend == "spacy":
        if lang != "en":
            raise ValueError("backend 'spacy' is for English only")
        from lem.annotate.spacy_backend import SpacyTagger

        return SpacyTagger(task, s.path)
    raise ValueError(f"unknown backend {s.backend!r}")


class Annotator:
    """POS + NER for one language with the configured backends (loaded once)."""

    def __init__(self, lang: str, settings: AnnotateSettings) -> None:
        if lang not in ("en", "si", "ta"):
            raise ValueError(f"language must be en, si or ta, got {lang!r}")
        self.lang, self.settings = lang, settings
        self.pos = make_tagger("pos", lang, settings.pos, settings.on_error)
        self.ner = make_tagger("ner", lang, settings.ner, settings.on_error)

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
            coarse = [coarse_for_lang(p, self.lang) for p in ps]
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


def read_sentences(
    path: str | os.PathLike, column: int | None = None, on_error: str = "raise"
) -> tuple[list[str], Counter]:
    """One sentence per line of a `.txt`, or column `column` of a header-less TSV. A line without that
    column raises (file, line) or, with on_error=skip, becomes an empty sentence (rows stay line-aligned)."""
    lines = read_lines(path)
    if lines and lines[-1] == "":
        lines.pop()
    skipped: Counter = Counter()
    if column is None and Path(path).suffix == ".tsv":
        column = 0
    if column is None:
        return [line.strip() for line in lines], skipped
    out = []
    for lineno, line in enumerate(lines, 1):
        parts = line.split("\t")
        if column >= len(parts):
            msg = f"{path}:{lineno}: expected at least {column + 1} tab-separated columns, got {len(parts)}"
            if on_error == "raise":
                raise ReaderError(msg)
            skipped["missing column"] += 1
            out.append("")
            continue
        out.append(parts[column].strip())
    return out, skipped


def annotate_file(
    lang: str,
    input: str | os.PathLike,
    out: str | os.PathLike,
    settings: AnnotateSettings,
    column: int | None = None,
    batch_lines: int = 2048,
) -> dict:
    """Annotate a sentence file into `out` (Parquet, atomically); returns counts and timings."""
    t0 = time.perf_counter()
    annotator = Annotator(lang, settings)
    t_load = time.perf_counter() - t0
    texts, skipped = read_sentences(input, column, settings.on_error)
    rows = []
    for b in range(0, len(texts), batch_lines):
        rows.extend(annotator.annotate(texts[b : b + batch_lines], first_id=b))
    write_annotations(out, rows)
    secs = time.perf_counter() - t0 - t_load
    n_words = sum(len(r.words) for r in rows)
    counts = Counter()
    for r in rows:
        for f in r.flags:
            counts["ne"] += bool(f & 1)
            counts["noun"] += bool(f & 2)
            counts["verb"] += bool(f & 4)
    stats = {
        "lang": lang,
        "sentences": len(rows),
        "words": n_words,
        "empty": sum(not r.words for r in rows),
        "skipped": dict(skipped),
        "ne_words": counts["ne"],
        "noun_words": counts["noun"],
        "verb_words": counts["verb"],
        "load_seconds": round(t_load, 2),
        "seconds": round(secs, 2),
        "pos_backend": settings.pos.backend,
        "ner_backend": settings.ner.backend,
    }
    log.info(
        "annotate %s: %d sentences, %d words (NE %d, NOUN %d, VERB %d), %d empty, skipped %s, pos=%s ner=%s, "
        "load %.1fs, tag %.1fs -> %s",
        lang, len(rows), n_words, counts["ne"], counts["noun"], counts["verb"], stats["empty"], dict(skipped),
        settings.pos.backend, settings.ner.backend, t_load, secs, out,
    )  # fmt: skip
    return stats
