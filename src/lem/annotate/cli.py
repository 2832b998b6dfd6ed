"""`lem annotate run | train-crf | train-ner | score | coverage`."""

from __future__ import annotations

import argparse
import json

from lem.annotate.readers import read_conll_columns, read_conll_ner, read_conllu
from lem.core.entities import NATIVE_TAGSET, TAGSETS, native_tagset
from lem.core.files import with_keys, write_json
from lem.core.stage import Stage, UsageError, Verb, arg, json_object, lang_code

# Imported inside functions: lem.annotate.run, .crf, .hf_ner, .schema, .scoring and .coverage (they load
# pyarrow, python-crfsuite or numpy, which `lem annotate --help` and the other verbs need not)


def conll_for_task(path: str, fmt: str, task: str, on_error: str):
    """Training sentences of (word, tag): CoNLL-U -> surface tokens with UPOS; CoNLL -> the last column
    (NER) or, for POS, the second column."""
    if fmt == "conllu":
        return read_conllu(path, on_error, surface=True)
    if task == "ner":
        return read_conll_ner(path, on_error)
    return [[(w, p) for w, p, *_ in s] for s in read_conll_columns(path, 3, on_error)]


def needs_tagset(lang: str, tagset: str | None, expected: str) -> None:
    """UsageError (one line) when `lang` has no default POS tag set and none is given: a language code of the
    config's own (`xx`) names the set its tags are in (before: a traceback from lem.core.entities)."""

    if not tagset and lang not in NATIVE_TAGSET:
        raise UsageError(
            f"--lang {lang}: no default POS tag set (en, si and ta have one): expected {expected} "
            f"(annotation.{lang}.pos.tagset in the config)"
        )


def cmd_run(a: argparse.Namespace) -> None:
    from lem.annotate.run import annotate_file

    pos = a.settings.pos
    if pos.backend == "none":
        needs_tagset(
            a.lang,
            None,
            "a POS backend that names its tag set, e.g. a lexicon with tagset penn, ucsc or upos",
        )
    elif pos.backend == "lexicon" and pos.format in ("tsv", "tnt"):
        needs_tagset(a.lang, pos.tagset, "--settings pos.tagset: penn, ucsc or upos")
    stats = annotate_file(a.lang, a.input, a.out, a.settings, a.column)
    if a.stats:
        write_json(a.stats, stats)


def cmd_train_crf(a: argparse.Namespace) -> None:
    from lem.annotate.crf import train_crf

    tagset = None
    if a.task == "pos":
        if a.format != "conllu":
            needs_tagset(a.lang, a.tagset, "--tagset penn, ucsc or upos")
        tagset = a.tagset or ("upos" if a.format == "conllu" else native_tagset(a.lang))
        if a.format == "conllu" and tagset != "upos":
            raise UsageError(f"{a.train}: CoNLL-U training tags are UPOS (column 4), not {tagset}")
    elif a.tagset:
        raise UsageError("--tagset is for --task pos only")
    sents = conll_for_task(a.train, a.format, a.task, a.on_error)
    train_crf(sents, a.out, a.task, a.lang, a.c1, a.c2, a.max_iterations, tagset)


def cmd_train_ner(a: argparse.Namespace) -> None:
    from lem.annotate.hf_ner import train_ner

    s = a.settings
    valid = read_conll_ner(a.valid, s.on_error) if a.valid else None
    metrics = train_ner(a.base_model, read_conll_ner(a.train, s.on_error), a.out, s, valid)
    print(json.dumps(metrics, indent=2))


def cmd_score(a: argparse.Namespace) -> None:
    from lem.annotate.schema import read_annotations
    from lem.annotate.scoring import score_against_conll

    result = with_keys(
        score_against_conll(read_annotations(a.pred), read_conll_columns(a.gold, 3), a.lang, a.gold_tagset),
        a.keys,
    )
    if a.out:
        write_json(a.out, result)
    else:
        print(json.dumps(result, indent=2))


def cmd_coverage(a: argparse.Namespace) -> None:
    from lem.annotate.coverage import CoverageSettings, annotation_coverage

    if len(a.langs) != len(a.texts):
        raise UsageError(f"--langs {a.langs} and --texts {a.texts} must have the same length")
    annotation_coverage(
        dict(zip(a.langs, a.texts, strict=True)),
        a.settings,
        a.variants,
        CoverageSettings.from_dict(a.check),
        a.out,
        a.types,
    )


LANG = arg(
    "--lang", required=True, type=lang_code, help="a language code (any: its resources are the config's)"
)
# a backend that cannot run here, and a language's coverage that fails its check: one line (bad input files,
# arguments and settings are lem.core.stage's input errors)
ERRORS = ("lem.annotate:BackendError", "lem.annotate.coverage:CoverageError")

STAGE = Stage(
    "annotate",
    __doc__.splitlines()[0],
    (
        Verb("run", "annotate a sentence file into the word-level Parquet format", cmd_run, (
            LANG,
            arg("--input", required=True, help=".txt (one sentence per line) or header-less .tsv"),
            arg("--column", type=int, default=None, help="TSV column (0-based) holding the sentence"),
            arg("--out", required=True),
            arg("--stats", default=None, help="optional JSON file for counts and timings"),
        ), settings="lem.annotate.settings:AnnotateSettings", errors=ERRORS),
        Verb("train-crf", "train a CRF POS or NER tagger (crfsuite model file)", cmd_train_crf, (
            arg("--task", required=True, choices=["pos", "ner"]),
            LANG,
            arg("--train", required=True),
            arg("--format", required=True, choices=["conllu", "conll"]),
            arg("--on-error", default="raise", choices=["raise", "skip"]),
            arg("--c1", type=float, default=0.05),
            arg("--c2", type=float, default=0.05),
            arg("--max-iterations", type=int, default=100),
            arg("--tagset", default=None, choices=list(TAGSETS),
                help="POS: the tag set of the training tags (default: upos for conllu, the language's native "
                "set for conll)"),
            arg("--out", required=True),
        ), errors=ERRORS),
        Verb("train-ner", "fine-tune a token-classification model on CoNLL NER", cmd_train_ner, (
            arg("--base-model", required=True, help="model dir (or hub id where the hub is reachable)"),
            arg("--train", required=True, help="CoNLL NER file (token ... TAG)"),
            arg("--valid", default=None),
            arg("--out", required=True),
        ), settings="lem.annotate.hf_ner:TrainNERSettings", errors=ERRORS),
        Verb("score", "POS accuracy and NER F1 of annotations against gold CoNLL word/POS/NER", cmd_score, (
            arg("--pred", required=True),
            arg("--gold", required=True),
            LANG,
            arg("--gold-tagset", default=None, choices=list(TAGSETS),
                help="tag set of the gold POS (default: native)"),
            arg("--out", default=None, help="JSON file (default: print)"),
        ), keys=True, errors=ERRORS),
        Verb("coverage", "NE / NOUN / VERB shares of each language's annotation on a sample of its text; fails "
             "on a zero share of an entity type the LEM variants mask", cmd_coverage, (
            arg("--langs", nargs="+", required=True, type=lang_code),
            arg("--texts", nargs="+", required=True, help="one sentence file per language, in --langs order"),
            arg("--variants", type=json_object, default={},
                help="JSON: variant -> masking settings (the types to require come from it)"),
            arg("--types", nargs="*", default=None, choices=["ne", "noun", "verb"],
                help="the entity types to require, instead of those of --variants (the workflow's: the types "
                "the trained variants mask, so that a variant removed reruns no annotation)"),
            arg("--check", type=json_object, default={}, help="JSON: {sample, min_share, seed}"),
            arg("--out", required=True),
        ), settings="lem.annotate.coverage:ANNOTATION_BY_LANGUAGE", settings_required=True, errors=ERRORS),
    ),
)  # fmt: skip
