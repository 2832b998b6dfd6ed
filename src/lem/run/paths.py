"""Where every artifact of a run lives: the one place its path is written.

Each path is a template with named fields (`{variant}`, `{seed}`, `{pair}`, ...). `fill(template, **values)`
sets some fields and leaves the others as they are, so the same template gives a rule's output pattern
(`fill(MODEL, variant="{tvariant}", stage="mono")`, or with other wildcard names: `pair="{src}-{tgt}"`) and
one job's file (`fill(MODEL, variant="lem", scope="tri", seed=1, stage="para")`). lem.run.Run builds its
paths from here, and the rule files read them through workflow/rules/common.smk (`artifact`): no rule file
writes a `results/` path of its own (tests/unit/test_rule_paths.py). `glob_pattern` gives a template's files as a
glob (`lem plan power` finds a finished run's metrics files so).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

RESULTS = "results"  # every path below but the sources' lies under it

# --- single files ------------------------------------------------------------------------------------------
LEAKAGE_REPORT = "results/corpus/leakage.json"
BASE_MODEL_CHECK = "results/checks/base_model.json"
COVERAGE = "results/annotate/coverage.json"
TOKENIZER = "results/tokenizer"
PLAN = "results/plan.{ext}"  # txt, tsv, json: `snakemake results/plan.txt` (rule plan, not part of `all`)

# --- the report ------------------------------------------------------------------------------------------------
REPORT_DIR = "results/report"
REPORT = {  # rule report's outputs, by the rule's names for them
    "tsv": REPORT_DIR + "/summary.tsv",
    "md": REPORT_DIR + "/summary.md",
    "html": REPORT_DIR + "/summary.html",
    "comparisons": REPORT_DIR + "/comparisons.tsv",
    "forest": REPORT_DIR + "/comparisons.png",
    "png": REPORT_DIR + "/overview.png",
    "mining": REPORT_DIR + "/mining.png",
    "masking": REPORT_DIR + "/masking.png",
    "training": REPORT_DIR + "/training.png",
    "controls": REPORT_DIR + "/controls.json",  # the controls' verdicts, which rule controls_gate reads
    "config": REPORT_DIR + "/config.json",
    "archive": REPORT_DIR + "/archive.tar.gz",  # every file the report read (lem.report.archive)
}
# what `all` asks of the report
REPORT_OUTPUTS = tuple(REPORT[k] for k in ("tsv", "md", "html", "forest", "png", "mining"))
CONTROLS_GATE = REPORT_DIR + "/controls_passed.json"
# the run against the shipped archive of the same configuration (lem report documented; .txt beside it)
DOCUMENTED = REPORT_DIR + "/documented.tsv"

# --- sources --------------------------------------------------------------------------------------------------
RAW = "resources/raw/{name}"
UNPACKED = "resources/unpacked/{path}"
HUB_MODEL = "resources/hf/{repo}/{revision}"
STAND_IN_MODEL = "resources/hf/lem-stand-in/xlm-roberta-{size}/random"

# --- corpus -----------------------------------------------------------------------------------------------------
CORPUS_DIR = "results/corpus"
GUARDED_MONO = "results/corpus/guarded/mono/{lang}.txt"
GUARDED_PARA = "results/corpus/guarded/para/{pair}.train.tsv"
CORPUS_MONO = "results/corpus/mono/{lang}.txt"  # before the leakage guard
CORPUS_PARA = "results/corpus/para/{pair}.{split}.tsv"  # train (before the guard), valid
CORPUS_PARA_TRAIN = "results/corpus/para/{pair}.train.tsv"
PARA_VALID = "results/corpus/para/{pair}.valid.tsv"
PARA_STATS = "results/corpus/para/{pair}.stats.json"  # `corpus.source: files`: lem data pairs' counts
CORPUS_GOLD = "results/corpus/gold/{lang}.conll"  # the generated corpus's NER gold
CORPUS_LEXICON = "results/corpus/lexicon/{lang}.{kind}.tsv"  # the generated world's pos and ner lexicons
FEATURES_MONO = "results/features/mono/{lang}"
FEATURES_PARA = "results/features/para/{pair}"

# --- annotation -----------------------------------------------------------------------------------------------
ANNOTATION_MONO = "results/annotations/mono/{lang}.parquet"
ANNOTATION_PARA = "results/annotations/para/{pair}.{split}.{lang}.parquet"  # one side of a pair's split
CRF_MODEL = "results/crf/{crf}.crf"
CRF_META = CRF_MODEL + ".json"
NER_MODEL = "results/ner/model"
NER_GOLD = "results/ner/gold/{lang}.{split}.conll"  # a language's gold split in two; `all`: every language's
NER_GOLD_TEXT = "results/ner/gold/{lang}.valid.txt"  # its validation sentences as text

# --- models -------------------------------------------------------------------------------------------------------
BASE_MODEL = "results/models/base/seed{seed}"
MODEL = "results/models/{variant}/{scope}/seed{seed}/{stage}"
CHECKPOINTS = "results/checkpoints/{variant}/{scope}/seed{seed}/{stage}"
BASE_CHECKPOINTS = "results/checkpoints/base/seed{seed}"

# --- evaluation sets ----------------------------------------------------------------------------------------------
GENERATED_EVAL_DIR = "results/eval"  # the generated corpus's evaluation sets:
GENERATED_NEWS = GENERATED_EVAL_DIR + "/news"  # the news-style mining set (a folder)
GENERATED_SENTIMENT = GENERATED_EVAL_DIR + "/sentiment/generated.csv"
GENERATED_NOISY = GENERATED_EVAL_DIR + "/noisy/{pair}.tsv"  # a noisy web-mined corpus to curate
GENERATED_NMT = GENERATED_EVAL_DIR + "/nmt/{pair}.{split}.tsv"  # valid, test
PREPARED_DIR = "results/eval/prepared/{evalset}/{pair}"
PREPARED = PREPARED_DIR + "/{lang}.tsv"
PREPARED_FILE = PREPARED_DIR + "/{name}"  # gold.tsv, stats.json
PREPARED_SENTIMENT = "results/eval/prepared/sentiment/{dataset}/{name}"  # {train,valid,test}.tsv, stats.json
PREPARED_CURATION = "results/eval/prepared/curation/{pair}/{name}"  # pairs.tsv, {src,tgt}.tsv, stats.json
PREPARED_NMT = "results/eval/prepared/nmt/{pair}/{split}.tsv"
CLEAN_DIR = "results/eval/clean/{evalset}/{pair}"
CLEAN = CLEAN_DIR + "/{name}"  # {src,tgt}.tsv, gold.tsv, stats.json
CHECKED = "results/eval/checked/{kind}/{name}.json"
ANNOTATION_EVAL = "results/annotation_eval/{annotator}/{lang}.{ext}"  # .parquet (tags), .json (metrics)

# --- evaluation ----------------------------------------------------------------------------------------------------
EMBEDDING = "results/embeddings/{variant}/seed{seed}/{evalset}/{pair}/{lang}.{ext}"
MINING = "results/mining/{variant}/seed{seed}/{evalset}/{pair}.{ext}"  # .tsv (pairs), .metrics.json
SENTIMENT = "results/sentiment/{variant}/seed{seed}/{dataset}/finetune{fseed}/metrics.json"
CURATION = "results/curation/{variant}/seed{seed}/{pair}/{name}"  # metrics.json, scores.tsv, ...
NMT_RUN = "results/nmt/{ranking}/seed{seed}/{pair}/keep{share}"
NMT_FILE = NMT_RUN + "/{name}"  # metrics.json, hypotheses.txt, references.txt, model
NMT_TRAIN = NMT_RUN + ".train.tsv"  # the kept share of the ranking


class _Unset(dict):
    """A format mapping that leaves a field it has no value for as it is (`{field}`)."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


class _Star(dict):
    """A format mapping that gives a field it has no value for as `*`."""

    def __missing__(self, key: str) -> str:
        return "*"


def fill(template: str, **values: Any) -> str:
    """`template` with the fields of `values` set (str of each) and every other field left as a field."""
    return template.format_map(_Unset({k: str(v) for k, v in values.items()}))


def glob_pattern(template: str, **values: Any) -> str:
    """`template` with the fields of `values` set and every other field `*`: its files as a glob pattern."""
    return template.format_map(_Star({k: str(v) for k, v in values.items()}))


def source_dep(spec: str) -> str:
    """The file a source spec depends on: `raw:<name>` (a fetched file), `unpacked:<archive>/<path>` (the
    unpacked archive folder), or a plain path."""
    if spec.startswith("raw:"):
        return fill(RAW, name=spec[4:])
    if spec.startswith("unpacked:"):
        return fill(UNPACKED, path=spec[9:].split("/", 1)[0])
    return spec


def source_file(spec: str) -> str:
    """The path a source spec names (inside an unpacked archive where it says so)."""
    if spec.startswith("unpacked:"):
        return fill(UNPACKED, path=spec[9:])
    return source_dep(spec)


def clean_dir(evalset: str, pair: str) -> str:
    """A mining set and pair without its sentences equal to pre-training text (rule `leakage_items`):
    {src,tgt}.tsv, gold.tsv, stats.json, what embedding, mining and the report read."""
    return fill(CLEAN_DIR, evalset=evalset, pair=pair)


def sentence_files(files: Sequence[tuple[str, str, str]]) -> list[str]:
    """The sentences of embedding files (evalset, pair, lang): a mining set's as `leakage_items` leaves them
    (`clean_dir`), a curation corpus's as prepared."""
    return [
        fill(PREPARED, evalset=e, pair=p, lang=lang)
        if e == "curation"
        else fill(CLEAN, evalset=e, pair=p, name=f"{lang}.tsv")
        for e, p, lang in files
    ]


def embedding_path(row: str, seed: int | str, evalset: str, pair: str, lang: str, ext: str) -> str:
    return fill(EMBEDDING, variant=row, seed=seed, evalset=evalset, pair=pair, lang=lang, ext=ext)
