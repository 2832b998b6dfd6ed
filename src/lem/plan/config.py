"""The cost table's figures (throughputs, costs per token, bytes per checkpoint), the errors and the config as
`lem plan cost` reads it: the files merged in order, validated, schema defaults filled."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from lem.config_check import switch_off
from lem.config_check.schema import SCHEMA  # the package's own copy of the workflow's schema

# Imported inside functions: snakemake (`lem plan --help` imports this module and needs no Snakemake)

# the pipeline's training stage (LM head on the labelled positions), xlm-roberta-base's architecture, batch 32,
# bf16: bench/gpu_training.py on one H200, 2026-11-26 (12,291 on an H100 before the labelled-positions head)
STAGE_TOKENS_PER_SECOND = 47_249
EVAL_COST = 1 / 3  # a forward pass per token, relative to a training step (forward + backward)
CKPT_STATE_BYTES = 1_000_000  # scheduler, RNG states, trainer_state.json, training arguments
TOKENIZER_BYTES_PER_ID = 90  # sentencepiece model + tokenizer.json of XLM-R: about 22 MB for 250,002 ids
# Known hub architectures, for sizing a model that is not downloaded yet (see lem.stand_in.SIZES)
KNOWN_HUB = {"FacebookAI/xlm-roberta-base": "base", "xlm-roberta-base": "base"}
KNOWN_NMT_PARAMETERS = {"facebook/nllb-200-distilled-600M": 615_073_792}  # its model.safetensors header
# Tokens per second of one job on one GPU for every kind of GPU job but pre-training (plan.tokens_per_second),
# with the basis of each figure; `plan.throughput.<kind>` replaces it (e.g. from scripts/gpu-check.sh's JSON)
THROUGHPUT = {
    "ner": (STAGE_TOKENS_PER_SECOND, "estimate: the pre-training stage's measured rate (same encoder, no LM head)"),
    "sentiment": (STAGE_TOKENS_PER_SECOND, "estimate: the pre-training stage's measured rate (same encoder, no LM head)"),
    "nmt": (STAGE_TOKENS_PER_SECOND / 2, "estimate: half the pre-training stage's rate (NLLB-600M: about 2x the work per token)"),
    "embedding": (3 * STAGE_TOKENS_PER_SECOND, "estimate: a forward pass, 3x the pre-training stage's rate"),
    "annotation": (3 * STAGE_TOKENS_PER_SECOND, "estimate: the NER model's forward pass, 3x the pre-training stage's rate"),
}  # fmt: skip
BYTES_PER_ANNOTATED_TOKEN = 16  # a tag column per task in the annotated files, about


class PlanError(ValueError):
    """The plan cannot be computed without guessing; the message names the config key to set."""


# --- config -------------------------------------------------------------------------------------------------


def deep_update(base: dict, new: dict) -> dict:
    for key, value in new.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            deep_update(base[key], value)
        else:
            base[key] = value
    return base


def load_config(configfiles: list[str | Path], schema: Path = SCHEMA) -> dict[str, Any]:
    """The config as the workflow sees it: the files merged in order, validated, schema defaults filled
    (the same `snakemake.utils.validate` call as workflow/rules/common.smk)."""
    config: dict[str, Any] = {}
    for path in configfiles:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        if not isinstance(data, dict):
            raise PlanError(f"{path}: a config file must hold a mapping")
        deep_update(config, data)
    return validated(config, schema)


def validated(config: dict[str, Any], schema: Path = SCHEMA) -> dict[str, Any]:
    from snakemake.utils import validate

    if not schema.is_file():
        raise PlanError(f"config schema {schema} not found (pass --schema)")
    config = switch_off(copy.deepcopy(config))  # an overlay's `enabled: false`, as the workflow reads it
    validate(config, str(schema), set_default=True)
    return config


# --- counting -----------------------------------------------------------------------------------------------


def read_configfiles(paths: list[str]) -> dict[str, Any]:
    """Config files merged in order (as by snakemake's --configfile), each read as YAML; PlanError in one line
    naming the file."""
    config: dict[str, Any] = {}
    for path in paths:
        try:
            data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        except (yaml.YAMLError, UnicodeDecodeError) as err:
            message = " ".join(str(err).split())
            raise PlanError(f"{path}: expected a YAML config file: {message}") from None
        if not isinstance(data, dict):
            raise PlanError(f"{path}: a config file must hold a mapping")
        deep_update(config, data)
    return config
