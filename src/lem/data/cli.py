"""`lem data <verb>`: downloads, MADLAD-400 extraction, dataset preparation and the leakage guard."""

from __future__ import annotations

import argparse
import logging
import sys

from lem.settings import settings_json

log = logging.getLogger(__name__)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lem data", description=__doc__)
    sub = p.add_subparsers(dest="verb", required=True)

    v = sub.add_parser("news", help="news gold-alignment benchmark (real sites or generated GEN)")
    v.add_argument("--root", required=True)
    v.add_argument("--site", required=True)
    v.add_argument("--pair", required=True, choices=["si-en", "si-ta", "ta-en"])
    v.add_argument("--doc-pairs", default="gold", choices=["gold", "all"])
    v.add_argument("--out-dir", required=True)

    v = sub.add_parser("sentiment", help="labelled CSV/TSV into stratified train/valid/test")
    v.add_argument("--input", required=True)
    v.add_argument("--settings", default=None)
    v.add_argument("--out-dir", required=True)

    v = sub.add_parser("lines", help="line-aligned parallel files into src<TAB>tgt")
    v.add_argument("--src", required=True)
    v.add_argument("--tgt", required=True)
    v.add_argument("--format", default="plain", choices=["plain", "nlpc"])
    v.add_argument("--out", required=True)
    v.add_argument("--stats", default=None, help="optional JSON file for the defect counts")

    v = sub.add_parser("mono", help="a one-sentence-per-line text file, cleaned (BOM, CRLF, blanks)")
    v.add_argument("--input", required=True)
    v.add_argument("--out", required=True)

    v = sub.add_parser("pairs", help="merge src<TAB>tgt files, drop duplicates, seeded train/valid split")
    v.add_argument("--inputs", nargs="+", required=True)
    v.add_argument("--valid-size", type=int, default=0, help="pairs held out (0: use --valid-input)")
    v.add_argument("--valid-input", nargs="*", default=None, help="given validation pair files")
    v.add_argument("--seed", type=int, default=13)
    v.add_argument("--out-train", required=True)
    v.add_argument("--out-valid", required=True)

    v = sub.add_parser("conll-text", help="sentences of a CoNLL file as text lines (tokens joined by spaces)")
    v.add_argument("--input", required=True)
    v.add_argument("--out", required=True)

    v = sub.add_parser("conll-split", help="seeded train/valid split of a CoNLL file by sentence")
    v.add_argument("--input", required=True)
    v.add_argument("--valid-fraction", type=float, required=True)
    v.add_argument("--seed", type=int, default=13)
    v.add_argument("--out-train", required=True)
    v.add_argument("--out-valid", required=True)

    v = sub.add_parser("unpack", help="extract a zip or tar archive safely into a folder")
    v.add_argument("--archive", required=True)
    v.add_argument("--out", required=True)

    v = sub.add_parser("multiner", help="multiNER 3-way parallel CoNLL into a seeded split")
    v.add_argument("--dir", required=True)
    v.add_argument("--settings", default=None)
    v.add_argument("--out-dir", required=True)

    v = sub.add_parser("fetch-url", help="download a pinned URL, checked by sha256, resumable")
    v.add_argument("--url", required=True)
    v.add_argument("--sha256", default=None)
    v.add_argument("--out", required=True)
    v.add_argument("--settings", default=None, help="download settings JSON (retries, backoff_s, ...)")

    v = sub.add_parser("fetch-hf", help="snapshot a hub model or dataset at a pinned revision")
    v.add_argument("--repo", required=True)
    v.add_argument("--revision", required=True)
    v.add_argument("--kind", required=True, choices=["model", "dataset"])
    v.add_argument("--out", required=True)
    v.add_argument(
        "--include", nargs="*", default=None, help="allow patterns (e.g. '*.json' '*.safetensors')"
    )
    v.add_argument(
        "--allow-unpinned", action="store_true", help="accept a branch or tag (its commit is recorded)"
    )

    v = sub.add_parser("madlad", help="MADLAD-400 sentence extraction with the paper's filters")
    v.add_argument("--lang", required=True, choices=["en", "si", "ta"])
    v.add_argument("--settings", default=None)
    v.add_argument("--out", required=True)
    v.add_argument("--local-jsonl", nargs="*", default=None, help="local MADLAD-layout JSONL(.gz) files")
    v.add_argument("--stats", default=None, help="optional JSON file for the filter counts")
    v.add_argument("--provenance", default=None, help="optional JSON file: the source and its commit")
    v.add_argument("--allow-unpinned", action="store_true", help="accept a revision that is not a commit")

    v = sub.add_parser("leakage", help="count/drop training lines that occur in evaluation sets")
    v.add_argument("--train", nargs="+", required=True)
    v.add_argument("--eval", nargs="+", required=True)
    v.add_argument("--out-clean", nargs="*", default=None)
    v.add_argument("--settings", default=None)
    v.add_argument("--report", required=True)
    return p


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if not logging.getLogger().handlers:
        logging.basicConfig(
            level=logging.INFO, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr
        )
    from lem.inputs import InputError

    try:
        return run(args)
    except (InputError, FileNotFoundError) as err:  # a malformed or missing input: one line naming it
        print(f"lem data {args.verb}: {err}", file=sys.stderr)
        return 1


def run(args: argparse.Namespace) -> int:
    from lem.files import write_json

    if args.verb == "news":
        from lem.data.news import load_news, write_news

        write_news(load_news(args.root, args.site, args.pair, args.doc_pairs), args.out_dir)
    elif args.verb == "sentiment":
        from lem.data.sentiment import SentimentSettings, prepare_sentiment

        prepare_sentiment(
            args.input, SentimentSettings.from_dict(settings_json(args.settings, "lem data")), args.out_dir
        )
    elif args.verb == "lines":
        from lem.data.parallel import read_parallel, write_pairs

        pairs, stats = read_parallel(args.src, args.tgt, args.format)
        write_pairs(pairs, args.out)
        if args.stats:
            write_json(args.stats, stats)
    elif args.verb == "mono":
        from lem.data.parallel import read_mono, write_lines

        write_lines(read_mono(args.input)[0], args.out)
    elif args.verb == "pairs":
        from lem.data.parallel import merge_and_split, read_pairs_tsv, write_pairs

        if not args.valid_input and args.valid_size < 1:
            print(
                "lem data pairs: give validation pair files (--valid-input) or --valid-size > 0",
                file=sys.stderr,
            )
            return 2
        if args.valid_input:
            train, _, _ = merge_and_split(args.inputs, 0, args.seed)
            valid = [p for path in args.valid_input for p in read_pairs_tsv(path)]
            if not valid:
                from lem.inputs import InputError

                raise InputError(
                    f"{', '.join(args.valid_input)}: expected validation 'source<TAB>target' lines, got no pair"
                )
        else:
            train, valid, _ = merge_and_split(args.inputs, args.valid_size, args.seed)
        write_pairs(train, args.out_train)
        write_pairs(valid, args.out_valid)
    elif args.verb == "conll-text":
        from lem.annotate.readers import read_conll_ner
        from lem.data.parallel import write_lines

        write_lines([" ".join(tok for tok, _ in sent) for sent in read_conll_ner(args.input)], args.out)
    elif args.verb == "conll-split":
        from lem.data.ner import split_conll, write_conll_blocks

        train, valid = split_conll(args.input, args.valid_fraction, args.seed)
        write_conll_blocks(train, args.out_train)
        write_conll_blocks(valid, args.out_valid)
    elif args.verb == "unpack":
        from lem.data.download import unpack

        unpack(args.archive, args.out)
    elif args.verb == "multiner":
        from lem.data.ner import MultinerSettings, split_multiner

        split_multiner(
            args.dir, MultinerSettings.from_dict(settings_json(args.settings, "lem data")), args.out_dir
        )
    elif args.verb == "fetch-url":
        from lem.data.download import DownloadSettings, FetchError, fetch_url

        try:
            fetch_url(
                args.url,
                args.out,
                args.sha256,
                DownloadSettings.from_dict(settings_json(args.settings, "lem data")),
            )
        except FetchError as err:
            print(f"lem data fetch-url: {err}", file=sys.stderr)
            return 1
    elif args.verb == "fetch-hf":
        from lem.data.download import FetchError, UnpinnedError, fetch_hf

        try:
            fetch_hf(
                args.repo,
                args.revision,
                args.kind,
                args.out,
                args.include,
                allow_unpinned=args.allow_unpinned,
            )
        except (FetchError, UnpinnedError) as err:
            print(f"lem data fetch-hf: {err}", file=sys.stderr)
            return 1
    elif args.verb == "madlad":
        from lem.data.download import UnpinnedError
        from lem.data.madlad import MadladSettings, extract_to_file

        try:
            counts = extract_to_file(
                args.lang,
                MadladSettings.from_dict(settings_json(args.settings, "lem data")),
                args.out,
                args.local_jsonl,
                provenance=args.provenance,
                allow_unpinned=args.allow_unpinned,
            )
        except UnpinnedError as err:
            print(f"lem data madlad: {err}", file=sys.stderr)
            return 1
        if args.stats:
            write_json(args.stats, counts)
    elif args.verb == "leakage":
        from lem.data.leakage import LeakageSettings, guard, write_report

        report = guard(
            args.train,
            args.eval,
            args.out_clean,
            LeakageSettings.from_dict(settings_json(args.settings, "lem data")),
        )
        write_report(report, args.report)
    return 0
