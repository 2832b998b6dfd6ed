"""`lem data <verb>`: downloads, MADLAD-400 extraction, dataset preparation and the leakage guard."""

from __future__ import annotations

import argparse

from lem.annotate.readers import read_conll_ner
from lem.core.files import write_json
from lem.core.stage import Stage, UsageError, Verb, arg
from lem.data import parallel
from lem.data.download import fetch_hf, fetch_url, unpack
from lem.data.leakage import (
    EvalLeakageSettings,
    LeakageSettings,
    check_evalset,
    drop_leaked_items,
    guard,
    write_report,
)
from lem.data.madlad import extract_to_file
from lem.data.news import load_sites, pair_languages, write_news
from lem.data.retrieval import load_retrieval

# Imported inside functions: lem.data.sentiment and lem.data.ner (they load numpy, which `lem data --help` and
# the other verbs need not)


def cmd_news(a: argparse.Namespace) -> None:
    try:
        pair_languages(a.pair)  # any two language codes: folders and ids name them (lem.data.news)
    except ValueError as e:
        raise UsageError(f"--pair: {e}") from None
    write_news(load_sites(a.root, a.site, a.pair, a.doc_pairs, a.gold_repairs), a.out_dir)


def cmd_retrieval(a: argparse.Namespace) -> None:
    try:
        pair_languages(a.pair)
    except ValueError as e:
        raise UsageError(f"--pair: {e}") from None
    write_news(load_retrieval(a.src, a.tgt, a.pair), a.out_dir)


def cmd_sentiment(a: argparse.Namespace) -> None:
    from lem.data.sentiment import prepare_sentiment

    prepare_sentiment(a.input, a.settings, a.out_dir)


def cmd_lines(a: argparse.Namespace) -> None:
    pairs, stats = parallel.read_parallel(a.src, a.tgt, a.format)
    parallel.write_pairs(pairs, a.out)
    if a.stats:
        write_json(a.stats, stats)


def cmd_mono(a: argparse.Namespace) -> None:
    parallel.write_lines(parallel.read_mono_files(a.input)[0], a.out)


def cmd_pairs(a: argparse.Namespace) -> None:
    if not a.valid_input and a.valid_size < 1:
        raise UsageError("give validation pair files (--valid-input) or --valid-size > 0")
    if a.valid_input:
        train, valid, stats = parallel.given_valid_split(a.inputs, a.valid_input)
    else:
        train, valid, stats = parallel.merge_and_split(a.inputs, a.valid_size, a.seed)
    parallel.write_pairs(train, a.out_train)
    parallel.write_pairs(valid, a.out_valid)
    if a.stats:
        write_json(a.stats, stats)


def cmd_conll_text(a: argparse.Namespace) -> None:
    parallel.write_lines([" ".join(tok for tok, _ in sent) for sent in read_conll_ner(a.input)], a.out)


def cmd_conll_split(a: argparse.Namespace) -> None:
    from lem.data.ner import split_conll, write_conll_blocks

    train, valid = split_conll(a.input, a.valid_fraction, a.seed)
    write_conll_blocks(train, a.out_train)
    write_conll_blocks(valid, a.out_valid)


def cmd_unpack(a: argparse.Namespace) -> None:
    unpack(a.archive, a.out)


def cmd_multiner(a: argparse.Namespace) -> None:
    from lem.data.ner import split_multiner

    split_multiner(a.dir, a.settings, a.out_dir)


def cmd_fetch_url(a: argparse.Namespace) -> None:
    fetch_url(
        a.url,
        a.out,
        a.sha256,
        a.settings,
        allow_unpinned=a.allow_unpinned,
        download=a.download,
        provenance=a.provenance,
    )


def cmd_fetch_hf(a: argparse.Namespace) -> None:
    fetch_hf(a.repo, a.revision, a.kind, a.out, a.include, allow_unpinned=a.allow_unpinned)


def cmd_madlad(a: argparse.Namespace) -> None:
    counts = extract_to_file(
        a.lang, a.settings, a.out, a.local_jsonl, provenance=a.provenance, allow_unpinned=a.allow_unpinned
    )
    if a.stats:
        write_json(a.stats, counts)


def cmd_leakage(a: argparse.Namespace) -> None:
    write_report(guard(a.train, a.eval, a.out_clean, a.settings), a.report)


def cmd_leakage_check(a: argparse.Namespace) -> None:
    write_json(a.out, check_evalset(a.name, a.eval, a.train, a.guard_report, a.settings or LeakageSettings()))


def cmd_leakage_items(a: argparse.Namespace) -> None:
    settings = a.settings or EvalLeakageSettings()
    drop_leaked_items(a.name, a.pair, a.prepared, a.out_dir, a.train, a.guard_report, settings)


DOWNLOAD_ERRORS = ("lem.data.download:FetchError", "lem.data.download:UnpinnedError")
LANG = arg("--lang", required=True, choices=["en", "si", "ta"])
SEED = arg("--seed", type=int, default=13)
OUT_TRAIN, OUT_VALID = arg("--out-train", required=True), arg("--out-valid", required=True)

STAGE = Stage(
    "data",
    __doc__.splitlines()[0],
    (
        Verb("news", "news gold-alignment benchmark (real sites or generated GEN)", cmd_news, (
            arg("--root", required=True,
                help="the benchmark's folder, or a folder of copies of it (each site read from the copy holding it)"),
            arg("--site", required=True, nargs="+",
                help="a site, or several pooled into one set (ids `<site>/<id>`: lem.data.news.load_sites)"),
            arg("--pair", required=True, help="src-tgt: two language codes (folders: lem.data.news.language_folder)"),
            arg("--doc-pairs", default="gold", choices=["gold", "all"]),
            arg("--gold-repairs", nargs="*", default=[], choices=["swapped", "other_language_prefix"],
                help="rewrites of a gold id to make (lem.data.news.REPAIR_RULES); none: such a link is dropped"),
            arg("--out-dir", required=True),
        )),
        Verb("retrieval", "line-aligned test sentences as a retrieval set (each sentence's translation among all)",
             cmd_retrieval, (
            arg("--src", required=True, help="the source language's sentences, one per line"),
            arg("--tgt", required=True, help="their translations, line k of one the translation of line k"),
            arg("--pair", required=True, help="src-tgt: two language codes"),
            arg("--out-dir", required=True),
        )),
        Verb("sentiment", "labelled CSV/TSV into stratified train/valid/test", cmd_sentiment, (
            arg("--input", required=True),
            arg("--out-dir", required=True),
        ), settings="lem.data.sentiment:SentimentDataSettings"),
        Verb("lines", "line-aligned parallel files into src<TAB>tgt", cmd_lines, (
            arg("--src", required=True),
            arg("--tgt", required=True),
            arg("--format", default="plain", choices=["plain", "nlpc"]),
            arg("--out", required=True),
            arg("--stats", default=None, help="optional JSON file for the defect counts"),
        )),
        Verb("mono", "one-sentence-per-line text files, cleaned (BOM, CRLF, blanks), concatenated", cmd_mono, (
            arg("--input", nargs="+", required=True, help="one or more files, read in this order"),
            arg("--out", required=True),
        )),
        Verb("pairs", "merge src<TAB>tgt files, drop duplicates, seeded train/valid split", cmd_pairs, (
            arg("--inputs", nargs="+", required=True),
            arg("--valid-size", type=int, default=0, help="pairs held out (0: use --valid-input)"),
            arg("--valid-input", nargs="*", default=None, help="given validation pair files"),
            SEED, OUT_TRAIN, OUT_VALID,
            arg("--stats", default=None, help="optional JSON file: pairs read, duplicates and repeated valid pairs dropped"),
        )),
        Verb("conll-text", "sentences of a CoNLL file as text lines (tokens joined by spaces)", cmd_conll_text, (
            arg("--input", required=True),
            arg("--out", required=True),
        )),
        Verb("conll-split", "seeded train/valid split of a CoNLL file by sentence", cmd_conll_split, (
            arg("--input", required=True),
            arg("--valid-fraction", type=float, required=True),
            SEED, OUT_TRAIN, OUT_VALID,
        )),
        Verb("unpack", "extract a zip or tar archive safely into a folder", cmd_unpack, (
            arg("--archive", required=True),
            arg("--out", required=True),
        ), errors=DOWNLOAD_ERRORS),
        Verb("multiner", "multiNER 3-way parallel CoNLL into a seeded split", cmd_multiner, (
            arg("--dir", required=True),
            arg("--out-dir", required=True),
        ), settings="lem.data.ner:MultinerSettings"),
        Verb("fetch-url", "download a pinned URL, checked by sha256, resumable", cmd_fetch_url, (
            arg("--url", required=True),
            arg("--sha256", default=None),
            arg("--out", required=True),
            arg("--download", default=None,
                help="where the bytes are fetched to, and where a copy placed by hand is looked for (default --out)"),
            arg("--provenance", default=None, help="JSON record: pin, observed sha256, bytes, how it came"),
            arg("--allow-unpinned", action="store_true", help="accept a URL with no --sha256 (its sha256 is recorded)"),
        ), settings="lem.data.download:DownloadSettings", errors=DOWNLOAD_ERRORS),
        Verb("fetch-hf", "snapshot a hub model or dataset at a pinned revision", cmd_fetch_hf, (
            arg("--repo", required=True),
            arg("--revision", required=True),
            arg("--kind", required=True, choices=["model", "dataset"]),
            arg("--out", required=True),
            arg("--include", nargs="*", default=None, help="allow patterns (e.g. '*.json' '*.safetensors')"),
            arg("--allow-unpinned", action="store_true", help="accept a branch or tag (its commit is recorded)"),
        ), errors=DOWNLOAD_ERRORS),
        Verb("madlad", "MADLAD-400 sentence extraction with the paper's filters", cmd_madlad, (
            LANG,
            arg("--out", required=True),
            arg("--local-jsonl", nargs="*", default=None, help="local MADLAD-layout JSONL(.gz) files"),
            arg("--stats", default=None, help="optional JSON file for the filter counts"),
            arg("--provenance", default=None, help="optional JSON file: the source and its commit"),
            arg("--allow-unpinned", action="store_true", help="accept a revision that is not a commit"),
        ), settings="lem.data.madlad:MadladSettings", errors=DOWNLOAD_ERRORS),
        Verb("leakage", "count/drop training lines that occur in evaluation sets", cmd_leakage, (
            arg("--train", nargs="+", required=True),
            arg("--eval", nargs="+", required=True),
            arg("--out-clean", nargs="*", default=None),
            arg("--report", required=True),
        ), settings="lem.data.leakage:LeakageSettings"),
        Verb("leakage-check", "an evaluation set against the guarded pre-training text: refused if a file the "
             "guard was not built with (a set added later) shares a sentence with it", cmd_leakage_check, (
            arg("--name", required=True, help="the evaluation set's name (in the message)"),
            arg("--eval", nargs="+", required=True, help="the set's prepared files"),
            arg("--train", nargs="+", required=True, help="the guarded training text"),
            arg("--guard-report", required=True, help="the guard's report (results/corpus/leakage.json)"),
            arg("--out", required=True),
        ), settings="lem.data.leakage:LeakageSettings", errors=("lem.data.leakage:LeakageError",)),
        Verb("leakage-items", "a prepared mining set and pair without its sentences equal to the guarded "
             "pre-training text (and their gold links), each counted and listed", cmd_leakage_items, (
            arg("--name", required=True, help="the evaluation set's name (in the stats and messages)"),
            arg("--pair", required=True, help="src-tgt, as prepared"),
            arg("--prepared", required=True, help="the folder of lem data news: {src,tgt}.tsv, gold.tsv, stats.json"),
            arg("--train", nargs="+", required=True, help="the guarded training text of the pair's languages"),
            arg("--guard-report", required=True, help="the guard's report (results/corpus/leakage.json)"),
            arg("--out-dir", required=True),
        ), settings="lem.data.leakage:EvalLeakageSettings", errors=("lem.data.leakage:LeakageError",)),
    ),
)  # fmt: skip
