"""Seeded generation of the embedded trilingual world (English, Sinhala, Tamil): corpora, gold tags and
evaluation sets.

One semantic frame filled with slot values (people, places, nouns, verbs ...) is realised in each
language's own word order (English SVO; Sinhala and Tamil SOV, postpositions, verb final), so the same
fill gives a translation triple, and every word keeps its gold POS and NER tag. The files written are
those of the "corpus" section of docs/contracts.md.

The world's three languages are built in (`lx.LANGS`: en, si, ta); the codes the files are written under
are the config's (`GenerateSettings.languages`: configured code -> built-in language, e.g. {xx: si} writes
Sinhala as `xx`: `mono/xx.txt`, `para/xx-en.train.tsv`, news ids `xx_<doc>_<k>`). Everything is drawn
under the built-in codes, so a renamed language's files hold the same text as the built-in one's.

The generator is split by concern: `settings` (GenerateSettings), `templates` (the frames), `world` (the
lexicon's pools, the variety drawn per sentence, slot values), `sentences` (realising and drawing sentences),
`sets` (the corpora and evaluation sets), `sentiment` (the code-mixed comments), `tags` (the lexicon files);
this module writes them all (`generate`).
"""

from __future__ import annotations

import csv
import io
import logging
import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any

from lem.core.files import atomic_path, write_text
from lem.corpus import lexicon as lx
from lem.corpus.sentences import sentence_text
from lem.corpus.sentiment import sentiment_set
from lem.corpus.sets import mono_corpus, news_benchmark, nmt_held_out, noisy_extra, noisy_pairs, para_corpus
from lem.corpus.settings import MAX_COUNT, PAIRS, GenerateSettings
from lem.corpus.tags import emittable_tags, gazetteer
from lem.corpus.templates import Tok
from lem.corpus.world import world_entries
from lem.data.news import language_folder

__all__ = ["MAX_COUNT", "PAIRS", "GenerateSettings", "generate"]  # the names callers import from here

log = logging.getLogger(__name__)

SITE = "GEN"


def _tsv(rows) -> str:
    return "".join("\t".join(str(c) for c in r) + "\n" for r in rows)


def _conll(sents: list[list[Tok]]) -> str:
    return "".join("".join(f"{w}\t{p}\t{n}\n" for w, p, n in toks) + "\n" for toks in sents)


def _csv(rows: list[tuple[str, str]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["", "Sentence", "Sentiment"])
    for i, (text, label) in enumerate(rows):
        w.writerow([i, text, label])
    return buf.getvalue()


def _write_news(root: Path, news: dict[str, dict[str, Any]], codes: dict[str, str]) -> None:
    """The news benchmark's layout (lem.data.news) under the configured codes (`codes`: built-in -> code):
    folders named by `language_folder`, ids and the gold file's name by the codes."""
    with atomic_path(root) as tmp:
        for pair, bench in news.items():
            src, tgt = pair.split("-")
            site = tmp / f"{language_folder(codes[src])}-{language_folder(codes[tgt])}" / SITE
            for lang, side in ((src, 0), (tgt, 1)):
                folder = site / language_folder(codes[lang])
                folder.mkdir(parents=True, exist_ok=True)
                for doc, sides in bench["docs"].items():
                    lines = [f"{codes[lang]}_{doc}_{k}\t{t}" for k, t in enumerate(sides[side])]
                    (folder / str(doc)).write_text("\n".join(lines) + "\n", encoding="utf-8")
            gold = [(codes[src] + a[len(src) :], codes[tgt] + b[len(tgt) :]) for a, b in bench["gold"]]
            (site / f"{SITE}.{codes[src]}-{codes[tgt]}").write_text(_tsv(gold), encoding="utf-8")


def evaluation_sentences(
    news: dict[str, dict[str, Any]], noisy: dict[str, list[tuple[str, str, str]]]
) -> dict[str, set[str]]:
    """Language -> the sentences of the news benchmark and the noisy pairs: never in training text."""
    banned: dict[str, set[str]] = {lg: set() for lg in lx.LANGS}
    for pair in PAIRS:
        src, tgt = pair.split("-")
        for sides in news[pair]["docs"].values():
            banned[src].update(sides[0])
            banned[tgt].update(sides[1])
        for a, b, label in noisy[pair]:
            banned[src].add(a)
            if label != "untranslated":
                banned[
                    tgt if label != "wrong_language" else next(lg for lg in lx.LANGS if lg not in (src, tgt))
                ].add(b)
    return banned


def add_noisy_extra(s: GenerateSettings, noisy, banned, mono, para) -> None:
    """Append each pair's `noisy_extra_pairs` to its noisy pairs: none of their sentences in any other text."""
    taken = {lg: set(banned[lg]) | {sentence_text(t) for t in mono[lg]} for lg in lx.LANGS}
    for pair, splits in para.items():
        for rows in splits.values():
            for lang, side in zip(pair.split("-"), zip(*rows, strict=True), strict=False):
                taken[lang].update(side)
    for pair in PAIRS:
        noisy[pair] += noisy_extra(s, pair, taken)


def _write_corpus(s: GenerateSettings, out_dir: Path, mono, para) -> None:
    """The training side: mono text, gold tags, lexicon files per language; parallel text per pair."""
    code = s.codes
    for lg, sents in mono.items():
        write_text(out_dir / "mono" / f"{code[lg]}.txt", "".join(sentence_text(t) + "\n" for t in sents))
        write_text(out_dir / "gold" / f"{code[lg]}.conll", _conll(sents))
        counts = Counter((w, p) for toks in sents for w, p, _ in toks)
        vocab = emittable_tags(lg, world_entries(s)) | set(counts)
        rows = sorted(vocab, key=lambda wt: (-counts[wt], wt))
        lexicon = out_dir / "lexicon"
        write_text(lexicon / f"{code[lg]}.pos.tsv", _tsv((w, t, counts[(w, t)]) for w, t in rows))
        write_text(lexicon / f"{code[lg]}.ner.tsv", _tsv(gazetteer(lg, world_entries(s))))
    for pair, splits in para.items():
        for split, rows in splits.items():
            write_text(out_dir / "para" / f"{s.pair_code(pair)}.{split}.tsv", _tsv(rows))


def _write_evaluation(s: GenerateSettings, eval_dir: Path, held_out, news, sentiment, noisy) -> None:
    """The evaluation side: NMT validation and test sets, news benchmark, sentiment set, noisy pairs."""
    for pair, splits in held_out.items():
        for split, rows in splits.items():
            name = f"{s.pair_code(pair)}.{split}.tsv"
            write_text(eval_dir / "nmt" / name, _tsv([("src", "tgt"), *rows.items()]))
    _write_news(eval_dir / "news", news, s.codes)
    write_text(eval_dir / "sentiment" / "generated.csv", _csv(sentiment))
    for pair, rows in noisy.items():
        write_text(eval_dir / "noisy" / f"{s.pair_code(pair)}.tsv", _tsv([("src", "tgt", "label"), *rows]))


def _summary(s: GenerateSettings, mono, para, news, sentiment, noisy) -> dict[str, Any]:
    code = s.codes
    return {
        "mono": {code[lg]: len(v) for lg, v in mono.items()},
        "para": {s.pair_code(pair): {k: len(v) for k, v in sp.items()} for pair, sp in para.items()},
        "news": {
            s.pair_code(pair): {
                "documents": len(b["docs"]),
                "gold_documents": len(b["gold_docs"]),
                "gold_links": len(b["gold"]),
            }
            for pair, b in news.items()
        },
        "sentiment": dict(sorted(Counter(lb for _, lb in sentiment).items())),
        "noisy": {
            s.pair_code(pair): dict(sorted(Counter(r[2] for r in rows).items()))
            for pair, rows in noisy.items()
        },
        "settings": asdict(s),
    }


def generate(settings: GenerateSettings, out_dir: str | Path, eval_dir: str | Path) -> dict[str, Any]:
    """Write the corpus (mono, para, gold, lexicon) under out_dir and the evaluation sets under eval_dir.

    Every set draws from its own random stream; the evaluation sets are drawn first and their sentences
    (`banned`) are kept out of every training text."""
    t0 = time.perf_counter()
    s = settings
    news = {pair: news_benchmark(s, pair) for pair in PAIRS}
    noisy = {pair: noisy_pairs(s, pair) for pair in PAIRS}
    banned = evaluation_sentences(news, noisy)
    held_out = nmt_held_out(s, banned)
    sentiment = sentiment_set(s)
    mono = {lg: mono_corpus(s, lg, banned[lg]) for lg in lx.LANGS}
    para = {pair: para_corpus(s, pair, banned) for pair in PAIRS}
    if any(s.noisy_extra_pairs.values()):
        add_noisy_extra(s, noisy, banned, mono, para)
    _write_corpus(s, Path(out_dir), mono, para)
    _write_evaluation(s, Path(eval_dir), held_out, news, sentiment, noisy)
    result = _summary(s, mono, para, news, sentiment, noisy)
    log.info(
        "corpus generate: mono %s, para %s train/%s valid per pair, news %s docs per pair, sentiment %d, noisy %d per pair in %.1fs",
        result["mono"],
        s.para_train,
        s.para_valid,
        s.news_documents,
        len(sentiment),
        s.noisy_pairs,
        time.perf_counter() - t0,
    )
    return result
