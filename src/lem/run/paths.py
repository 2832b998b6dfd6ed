"""Where every artifact of a run lives: the one place its path is written.

Each path is a template with named fields (`{variant}`, `{seed}`, `{pair}`, ...). `fill(template, **values)`
sets some fields and leaves the others as they are, so the same template gives a rule's output pattern
(`fill(MODEL, variant="{tvariant}", stage="mono")`, or with other wildcard names: `pair="{src}-{tgt}"`) and
one job's file (`fill(MODEL, variant="lem", scope="tri", seed=1, stage="para")`). lem.run.Run builds its
paths from here, and the rule files read them through workflow/rules/common.smk (`artifact`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# --- single files ------------------------------------------------------------------------------------------
LEAKAGE_REPORT = "results/corpus/leakage.json"
BASE_MODEL_CHECK = "results/checks/base_model.json"
COVERAGE = "results/annotate/coverage.json"
CONTROLS_GATE = "results/report/controls_passed.json"
REPORT_OUTPUTS = (
    "results/report/summary.tsv",
    "results/report/summary.md",
    "results/report/summary.html",
    "results/report/comparisons.png",
    "results/report/overview.png",
    "results/report/mining.png",
)
TOKENIZER = "results/tokenizer"

# --- sources --------------------------------------------------------------------------------------------------
RAW = "resources/raw/{name}"
UNPACKED = "resources/unpacked/{path}"
HUB_MODEL = "resources/hf/{repo}/{revision}"
STAND_IN_MODEL = "resources/hf/lem-stand-in/xlm-roberta-{size}/random"

# --- corpus -----------------------------------------------------------------------------------------------------
GUARDED_MONO = "results/corpus/guarded/mono/{lang}.txt"
GUARDED_PARA = "results/corpus/guarded/para/{pair}.train.tsv"
PARA_VALID = "results/corpus/para/{pair}.valid.tsv"
CORPUS_MONO = "results/corpus/mono/{lang}.txt"  # before the leakage guard
CORPUS_PARA_TRAIN = "results/corpus/para/{pair}.train.tsv"
FEATURES_MONO = "results/features/mono/{lang}"
FEATURES_PARA = "results/features/para/{pair}"

# --- models -------------------------------------------------------------------------------------------------------
BASE_MODEL = "results/models/base/seed{seed}"
MODEL = "results/models/{variant}/{scope}/seed{seed}/{stage}"
CHECKPOINTS = "results/checkpoints/{variant}/{scope}/seed{seed}/{stage}"
BASE_CHECKPOINTS = "results/checkpoints/base/seed{seed}"

# --- evaluation sets ----------------------------------------------------------------------------------------------
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


def fill(template: str, **values: Any) -> str:
    """`template` with the fields of `values` set (str of each) and every other field left as a field."""
    return template.format_map(_Unset({k: str(v) for k, v in values.items()}))


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
