"""`lem annotate run | train-crf | train-ner | score | coverage`."""

from __future__ import annotations

import argparse
import json
import logging
import sys

from lem.entities import TAGSETS
from lem.settings import settings_json

log = logging.getLogger("lem.annotate")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lem annotate", description=__doc__)
    sub = p.add_subparsers(dest="verb", required=True)
    r = sub.add_parser("run", help="annotate a sentence file into the word-level Parquet format")
    r.add_argument("--lang", required=True, choices=["en", "si", "ta"])
    r.add_argument("--input", required=True, help=".txt (one sentence per line) or header-less .tsv")
    r.add_argument("--column", type=int, default=None, help="TSV column (0-based) holding the sentence")
    r.add_argument("--settings", default="{}", help="JSON: {pos: {...}, ner: {...}, on_error}")
    r.add_argument("--out", required=True)
    r.add_argument("--stats", default=None, help="optional JSON file for counts and timings")
    c = sub.add_parser("train-crf", help="train a CRF POS or NER tagger (crfsuite model file)")
    c.add_argument("--task", required=True, choices=["pos", "ner"])
    c.add_argument("--lang", required=True, choices=["en", "si", "ta"])
    c.add_argument("--train", required=True)
    c.add_argument("--format", required=True, choices=["conllu", "conll"])
    c.add_argument("--on-error", default="raise", choices=["raise", "skip"])
    c.add_argument("--c1", type=float, default=0.05)
    c.add_argument("--c2", type=float, default=0.05)
    c.add_argument("--max-iterations", type=int, default=100)
    c.add_argument(
        "--tagset",
        default=None,
        choices=list(TAGSETS),
        help="POS: the tag set of the training tags (default: upos for conllu, the language's native set for conll)",
    )
    c.add_argument("--out", required=True)
    t = sub.add_parser("train-ner", help="fine-tune a token-classification model on CoNLL NER")
    t.add_argument("--base-model", required=True, help="model dir (or hub id where the hub is reachable)")
    t.add_argument("--train", required=True, help="CoNLL NER file (token ... TAG)")
    t.add_argument("--valid", default=None)
    t.add_argument(
        "--settings", default="{}", help="JSON: epochs, learning_rate, batch_size, max_length, ..."
    )
    t.add_argument("--out", required=True)
    s = sub.add_parser("score", help="POS accuracy and NER F1 of annotations against gold CoNLL word/POS/NER")
    s.add_argument("--pred", required=True)
    s.add_argument("--gold", required=True)
    s.add_argument("--lang", required=True, choices=["en", "si", "ta"])
    s.add_argument(
        "--gold-tagset", default=None, choices=list(TAGSETS), help="tag set of the gold POS (default: native)"
    )
    s.add_argument("--out", default=None, help="JSON file (default: print)")
    s.add_argument("--keys", default=None, help="JSON object written as the metrics file's `keys`")
    v = sub.add_parser(
        "coverage",
        help="NE / NOUN / VERB shares of each language's annotation on a sample of its text; fails on a zero "
        "share of an entity type the LEM variants mask",
    )
    v.add_argument("--langs", nargs="+", required=True, choices=["en", "si", "ta"])
    v.add_argument(
        "--texts", nargs="+", required=True, help="one sentence file per language, in --langs order"
    )
    v.add_argument(
        "--settings", required=True, help="JSON: language -> annotation settings ({pos, ner, ...})"
    )
    v.add_argument(
        "--variants",
        default="{}",
        help="JSON: variant -> masking settings (the types to require come from it)",
    )
    v.add_argument("--check", default="{}", help="JSON: {sample, min_share, seed}")
    v.add_argument("--out", required=True)
    return p


def conll_for_task(path: str, fmt: str, task: str, on_error: str):
    """Training sentences of (word, tag): CoNLL-U -> surface tokens with UPOS; CoNLL -> the last column
    (NER) or, for POS, the second column."""
    from lem.annotate.readers import read_conll_columns, read_conll_ner, read_conllu

    if fmt == "conllu":
        return read_conllu(path, on_error, surface=True)
    if task == "ner":
        return read_conll_ner(path, on_error)
    return [[(w, p) for w, p, *_ in s] for s in read_conll_columns(path, 3, on_error)]


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    a = parser().parse_args(argv)
    from lem.files import metrics_keys, with_keys, write_json

    try:
        if a.verb == "run":
            from lem.annotate.run import annotate_file
            from lem.annotate.settings import AnnotateSettings

            stats = annotate_file(
                a.lang,
                a.input,
                a.out,
                AnnotateSettings.from_dict(settings_json(a.settings, "lem annotate")),
                a.column,
            )
            if a.stats:
                write_json(a.stats, stats)
        elif a.verb == "train-crf":
            from lem.annotate.crf import train_crf
            from lem.entities import NATIVE_TAGSET

            tagset = None
            if a.task == "pos":
                tagset = a.tagset or ("upos" if a.format == "conllu" else NATIVE_TAGSET[a.lang])
                if a.format == "conllu" and tagset != "upos":
                    raise ValueError(f"{a.train}: CoNLL-U training tags are UPOS (column 4), not {tagset}")
            elif a.tagset:
                raise ValueError("--tagset is for --task pos only")
            sents = conll_for_task(a.train, a.format, a.task, a.on_error)
            train_crf(sents, a.out, a.task, a.lang, a.c1, a.c2, a.max_iterations, tagset)
        elif a.verb == "train-ner":
            from lem.annotate.hf_ner import TrainNERSettings, train_ner
            from lem.annotate.readers import read_conll_ner

            s = TrainNERSettings.from_dict(settings_json(a.settings, "lem annotate"))
            valid = read_conll_ner(a.valid, s.on_error) if a.valid else None
            metrics = train_ner(a.base_model, read_conll_ner(a.train, s.on_error), a.out, s, valid)
            print(json.dumps(metrics, indent=2))
        elif a.verb == "score":
            from lem.annotate.readers import read_conll_columns
            from lem.annotate.schema import read_annotations
            from lem.annotate.scoring import score_against_conll

            result = with_keys(
                score_against_conll(
                    read_annotations(a.pred), read_conll_columns(a.gold, 3), a.lang, a.gold_tagset
                ),
                metrics_keys(a.keys),
            )
            if a.out:
                write_json(a.out, result)
            else:
                print(json.dumps(result, indent=2))
        elif a.verb == "coverage":
            from lem.annotate.coverage import CoverageSettings, annotation_coverage

            if len(a.langs) != len(a.texts):
                raise ValueError(f"--langs {a.langs} and --texts {a.texts} must have the same length")
            annotation_coverage(
                dict(zip(a.langs, a.texts, strict=True)),
                settings_json(a.settings, "lem annotate coverage"),
                settings_json(a.variants, "lem annotate coverage"),
                CoverageSettings.from_dict(settings_json(a.check, "lem annotate coverage")),
                a.out,
            )
    except (ValueError, RuntimeError, FileNotFoundError) as e:
        print(f"lem annotate {a.verb}: {e}", file=sys.stderr)
        return 1
    return 0
