"""The model of a run: which rows, seeds and scopes a config has, where each artifact lives, which jobs it
implies and what settings each job gets, defined once.

`Run(config)` takes the config as the workflow holds it (validated, schema defaults filled, `{data_root}`
expanded: lem.config_check). workflow/rules/common.smk builds one (`RUN`) and its input functions call it;
`lem plan cost` counts its training jobs and `lem.config_check` checks the settings it merges. Everything is
computed from the config when asked (nothing at construction), so a config that is still being checked
reaches only what it asks for.

- rows: `variants` (`base` and the trained ones), the controls (`control_lexical`, `control_random`) and the
  reference encoders (`ref_<name>`); `model_of` maps each variant to the first-listed variant with the same
  masking (lem.masking.collate.variant_aliases), whose model it shares; `trained_models` are those that train.
- seeds: `seeds` (`pretrain.seeds`, else the run's `seed`); `row_seeds(row)` those a row has: every seed for
  a trained variant and a base model trained from scratch, the first for the others.
- scopes: `tri` (one model for all languages) or one per pair (`pretrain.scope`).
- paths: `base_model_dir`, `model_for`, `model_dir`, `nmt_run_dir`, the evaluation and leakage files, ...
- the job grid: `training_jobs`, `embed_jobs`, `reference_jobs`, `mining_outputs`, `sentiment_outputs`, `curation_outputs`,
  `nmt_runs`, `annotation_eval_outputs`, and `jobs()`: rule -> the outputs of every job the config implies
  (tests/planning/test_run_model.py checks it against `snakemake -n`).
- settings: `settings_for(rule, **wildcards)`: the settings a rule passes to its `lem` verb (`--settings`).

By concern: `paths` (where every artifact lives: the one place a path is written, which the rule files read
through workflow/rules/common.smk), `rows` (rows, seeds, scopes, model folders), `evalsets` (corpus, annotation,
evaluation sets), `grid` (the job grid), `settings` (the table of every rule's settings merges, which
lem.config_check reads too), `helpers` (what the rules' shell commands share).
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
from lem.run.settings import SETTINGS, JobSettings, curation_mining
from lem.run.sources import multiner_inputs, news_inputs
from lem.run.training_code import training_code


class Run(JobSettings):
    """The model of one run of a config (see the package's docstring): its rows, evaluation sets, job grid
    and settings (lem.run.rows.Rows < evalsets.EvalSets < grid.Grid < settings.JobSettings)."""


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
    "sha256_arg",
    "source_dep",
    "source_file",
    "src_tgt",
    "training_code",
]
