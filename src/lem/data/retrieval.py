"""A line-aligned parallel test set as a sentence-retrieval mining set (`mining.evalsets.<name>.format: parallel`).

Two files with one sentence per line, line k of one the translation of line k of the other (the multiNER test
split, `resources/multiner/<lang>.test.txt`, is 3-way parallel: any two of its languages are such a pair).
Each sentence's translation is to be found among all the set's sentences of the other language: the set is
one "document" holding every sentence, so margin mining retrieves over all of them and the gold is the
identity of line numbers. It is written in the news benchmark's prepared layout (`lem.data.news.write_news`:
`{src,tgt}.tsv` with id, doc, text; `gold.tsv`; `stats.json`), so that the leakage check, embedding, mining,
its chance level and the report read it as they read a news site.

Nothing is guessed: a line empty on either side is no pair (dropped, counted); a sentence whose text repeats
an earlier one of its side (after stripping spaces) makes retrieval ambiguous, since two targets are then the
same text, so every line holding a repeated text is dropped, counted per side. Files of different line counts
are refused in one line naming both (they are not line-aligned), as is text that is not UTF-8.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

from lem.core.inputs import MAX_LINE_CHARS, InputError, read_lines
from lem.data.news import NewsBenchmark, gold_summary, pair_languages

DOC = "all"  # the one document holding every sentence: retrieval among all of them
SITE = "line-aligned"  # what the report's gold table shows in its `site` column


def load_retrieval(src_file: str | os.PathLike, tgt_file: str | os.PathLike, pair: str) -> NewsBenchmark:
    """The line-aligned files `src_file` and `tgt_file` of `pair` as a retrieval set (see the module)."""
    src, tgt = pair_languages(pair)
    lines = {src: read_lines(src_file), tgt: read_lines(tgt_file)}
    if len(lines[src]) != len(lines[tgt]):
        raise InputError(
            f"{src_file} ({len(lines[src]):,} lines) and {tgt_file} ({len(lines[tgt]):,} lines): expected "
            f"line-aligned files of one sentence per line, line k of each the translation of the other's, "
            f"for the {pair} retrieval set"
        )
    if not lines[src]:
        raise InputError(
            f"{src_file}: expected one sentence per line, got an empty file ({pair} retrieval set)"
        )
    counts: Counter[str] = Counter()
    texts = {lang: [" ".join(line.split()) for line in lines[lang]] for lang in (src, tgt)}
    repeated = {
        lang: {t for t, n in Counter(t for t in texts[lang] if t).items() if n > 1} for lang in (src, tgt)
    }
    src_rows: list[tuple[str, str, str]] = []
    tgt_rows: list[tuple[str, str, str]] = []
    gold: list[tuple[str, str]] = []
    for k, (s, t) in enumerate(zip(texts[src], texts[tgt], strict=True)):
        if not s or not t:
            counts["gold_empty_line"] += 1
            continue
        if len(s) > MAX_LINE_CHARS or len(t) > MAX_LINE_CHARS:
            counts["gold_long_line"] += 1
            continue
        if s in repeated[src] or t in repeated[tgt]:
            counts["gold_repeated_src_text" if s in repeated[src] else "gold_repeated_tgt_text"] += 1
            continue
        sid, tid = f"{src}_{DOC}_{k}", f"{tgt}_{DOC}_{k}"
        src_rows.append((sid, DOC, s))
        tgt_rows.append((tid, DOC, t))
        gold.append((sid, tid))
    if not gold:
        raise InputError(
            f"{src_file}, {tgt_file}: expected line-aligned sentences, got no line with a distinct sentence on "
            f"both sides ({dict(counts)}; {pair} retrieval set): mining would have nothing to score"
        )
    defects = {k: v for k, v in sorted(counts.items())}
    stats: dict[str, Any] = {
        "site": SITE,
        "pair": pair,
        "format": "parallel",
        "files": {src: str(src_file), tgt: str(tgt_file)},
        "doc_pairs": "all",
        "doc_pairs_total": 1,
        "doc_pairs_with_gold": 1,
        "doc_pairs_used": 1,
        "src_sentences": len(src_rows),
        "tgt_sentences": len(tgt_rows),
        "gold_links": len(gold),
        "defects": defects,
        "gold_lines": len(lines[src]),
        "gold_links_read": len(lines[src]),
        **gold_summary(defects),
        "gold_file": f"{src_file} + {tgt_file} (line k <-> line k)",
        "gold_repairs": [],
        "gold_ambiguous": [],
    }
    return NewsBenchmark(pair, Path(src_file).parent.name or SITE, src_rows, tgt_rows, gold, stats)
