"""The model of a run: which rows, seeds and scopes a config has, where each artifact lives, which jobs it
implies and what settings each job gets, defined once.

`Run(config)` (lem.run.model) takes the config as the workflow holds it (validated, schema defaults filled,
`{data_root}` expanded: lem.config_check). workflow/rules/common.smk builds one (`RUN`) and its input functions
call it; `lem plan cost` counts its training jobs and `lem.config_check` checks the settings the rules merge.
Everything is computed from the config when asked (nothing at construction), so a config that is still being
checked reaches only what it asks for.

A `Run` (`model`) is its config's rows, seeds and scopes, with two parts of its own that read them:
- `rows` (`Rows`, Run's one base): `variants` (`base` and the trained ones), the controls (`control_lexical`,
  `control_random`) and the reference encoders (`ref_<name>`); `model_of` maps each variant to the first-listed
  variant with the same masking (lem.masking.collate.variant_aliases), whose model it shares; `trained_models`
  are those that train; `seeds` (`pretrain.seeds`, else the run's `seed`), `row_seeds(row)` those a row has
  (every seed for a trained variant and a base model trained from scratch, the first for the others); `scopes`:
  `tri` (one model for all languages) or one per pair (`pretrain.scope`); the model folders (`base_model_dir`,
  `model_for`, `model_dir`, ...).
- `run.sets` (`evalsets`): the corpus, annotation and evaluation sets, the files each reads and the leakage
  guard's inputs.
- `run.grid` (`grid`): the job grid: `training_jobs`, `embed_jobs`, `reference_jobs`, `mining_outputs`,
  `sentiment_outputs`, `curation_outputs`, `nmt_runs`, ..., and `jobs()`: rule -> the outputs of every job the
  config implies (tests/planning/test_run_model.py checks it against `snakemake -n`).

The settings each rule passes to its `lem` verb (`--settings`) are plain functions of the run and the job's
wildcards, one per rule (`settings`: `pretrain_mono(run, tvariant, scope, seed)`, ...), which the rule files
call by name; `SETTINGS` holds each with an account of its merges as data, which lem.config_check and
`lem plan settings` read. The other modules: `paths` (where every artifact lives: the one place a path is
written, which the rule files read through workflow/rules/common.smk), `helpers` (what the rules' shell
commands share), `envs`, `sources`, `training_code`, `job_env` (what the workflow sets up for its jobs).
"""

from __future__ import annotations

from lem.run.grid import STAGES, EmbedRule, TrainingJob
from lem.run.helpers import (
    MARGIN_KEYS,
    as_json,
    by_kind,
    file_args,
    metrics_keys,
    names_regex,
    pair_source,
    reference_args,
    set_suffix,
    sha256_arg,
    src_tgt,
)
from lem.run.model import Run
from lem.run.paths import (
    BASE_MODEL_CHECK,
    CONTROLS_GATE,
    COVERAGE,
    LEAKAGE_REPORT,
    REPORT_OUTPUTS,
    clean_dir,
    sentence_files,
    source_dep,
    source_file,
)
from lem.run.rows import CONTROL_KINDS
from lem.run.settings import SETTINGS, curation_mining, settings_for
from lem.run.sources import multiner_inputs, news_inputs
from lem.run.training_code import training_code

__all__ = [
    "BASE_MODEL_CHECK",
    "CONTROLS_GATE",
    "CONTROL_KINDS",
    "COVERAGE",
    "LEAKAGE_REPORT",
    "MARGIN_KEYS",
    "REPORT_OUTPUTS",
    "SETTINGS",
    "STAGES",
    "EmbedRule",
    "Run",
    "TrainingJob",
    "as_json",
    "by_kind",
    "clean_dir",
    "curation_mining",
    "file_args",
    "metrics_keys",
    "multiner_inputs",
    "names_regex",
    "news_inputs",
    "pair_source",
    "reference_args",
    "sentence_files",
    "set_suffix",
    "settings_for",
    "sha256_arg",
    "source_dep",
    "source_file",
    "src_tgt",
    "training_code",
]
