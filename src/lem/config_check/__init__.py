"""Every config section checked against the settings dataclass of the `lem` verb that reads it.

The settings dataclasses (`lem.mine.MineSettings`, `lem.pretrain.PretrainTrainingSettings`, ...) are the single
source of truth for what a section may hold; the schema types the other sections (and repeats a few of
these). `check_config` builds every section's dataclass from the config exactly as the workflow's rules
pass it (the same merges: the run's `seed`, a stage's `epochs`, a MADLAD language's `size`, ...), so an
unknown key, a value of the wrong type or a value the dataclass refuses fails when the workflow is loaded
(workflow/rules/common.smk, right after the schema), before any job runs, in one line naming the key:

    mining.settings.kk: unknown key; known: block_size, candidate_k, ... (lem.mine.MineSettings, ...)
    mining.settings.k: mining settings k, candidate_k and block_size must be >= 1 (lem.mine...)
    mining.settings.threshold: expected a number or null, got '0.5' (lem.mine.MineSettings, `lem mine run`)

Types come from the dataclass's annotations (checked on the built object, so what `from_dict` converts,
e.g. a list into a tuple, passes); values from the dataclass's own `from_dict` checks. A key that the rule
sets itself (a stage's `training.epochs`, MADLAD's `settings.size`, curation's `settings.mining`) is refused
rather than silently replaced. `SECTIONS` lists every checked section; config/README.md documents them.

Then what joins the sections (`_check_*`), each failure one line naming the key, the value and what is
allowed: names that become paths match `[A-Za-z0-9_.-]+`; pairs join two different configured languages;
every language has its annotation and (`corpus.source: files`) its text, every pair its files; evaluation
sets, sentiment datasets and curation corpora name configured pairs; every listed variant has its masking;
sentiment seeds are distinct; a reference encoder's row is no variant's name, a laser one has a LASER code per
language, a hub model is pinned; `embedding.max_length` and `pretrain.max_length` fit the base model's
positions (read from its `config.json` once the folder exists; a scratch model is built for
`pretrain.max_length`), as does a `sentiment.training.max_length` that is set; what the base model's
architecture fixes (`embedding.layer` one of its hidden states, heads that divide the hidden size,
`mining.settings.pq_m` a divisor of the embedding dimension: `model_shape`); seeds in numpy's range; at least one
curation share; a pretrained base model names its folder; `raw:` / `unpacked:` specs name a source of
`sources.files`, with no `..`; a mining set gives only its format's keys, and a parallel set's files are each
language's own, files that exist (or that the run writes) and in the language's script; every comparison a family
of `evidence.families` the config writes declares is one the run makes (its variants, its tasks), and no pair is
declared twice:

    curation.corpora: 'en-ta' is not a configured pair; configured: si-en, si-ta, ta-en (`pairs`)
    embedding.max_length: 128 exceeds the base model's 64 tokens (...); at most 64
    embedding.layer: 99: the base model has 2 layers (base_model.model), so hidden states 0..2 (...)

By concern: `errors` (ConfigError, the short forms of messages), `sections` (the checked sections and `build`),
`provenance` (which config key each merged value comes from: the accounts of the rules' settings functions,
lem.run.settings.SETTINGS), `names` (names, pairs, languages, variants, seeds, sources), `files` (what the
config's files and annotation hold), `model` (the base model's positions and architecture), `schema` (the schema, `{data_root}`, `enabled`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lem.config_check.errors import ConfigError
from lem.config_check.files import (
    ORACLE_LABEL,
    SCRIPT_MIN_SHARE,
    SCRIPT_SAMPLE_LINES,
    _check_corpus_files,
    _check_crf_models,
    _check_curation_labels,
    _check_retrieval_sets,
    _check_scripts,
    _check_tagsets,
)
from lem.config_check.model import (
    LASER_DIM,
    ModelShape,
    _check_lengths,
    _check_model_shape,
    _check_pq_m,
    base_model_folder,
    model_positions,
    model_shape,
)
from lem.config_check.names import (
    NAME_MAX,
    NAME_RE,
    SEED_MAX,
    _check_annotation_langs,
    _check_base_model,
    _check_controls,
    _check_epochs,
    _check_keep_fractions,
    _check_names,
    _check_pair_uses,
    _check_pairs,
    _check_references,
    _check_seed_range,
    _check_seeds,
    _check_source_refs,
    _check_variants,
)
from lem.config_check.provenance import Use, _uses
from lem.config_check.schema import (
    ALLOW_YTE,
    DATA_ROOT,
    SWITCHED,
    YTE_KEY,
    _check_finite,
    _check_yte_key,
    expand_data_root,
    refuse_yte,
    schema_refusal,
    switch_off,
    validate_config,
    written_config,
)
from lem.config_check.sections import (
    ANNOTATE,
    SECTION,
    SECTIONS,
    TRAINING,
    WARN_ONLY,
    Section,
    build,
    type_problems,
)
from lem.data.download import unpinned_hub_sources, unpinned_url_sources
from lem.evidence.compare import EvidenceSettings, check_declared, merged_families
from lem.run import Run
from lem.run.rows import CONTROL_KINDS


def check_config(config: dict[str, Any], written: dict[str, Any] | None = None) -> None:
    """Build every section's settings dataclass from `config` (validated, schema defaults filled) as the
    rules pass it, and check what joins the sections (names, pairs, languages, lengths); raise ConfigError
    in one line naming the config key on the first problem. `written`: the config before the schema's
    defaults, so that a message says when a value is a default the user never wrote."""
    _check_finite(config)
    _check_names(config)
    _check_pairs(config)
    _check_annotation_langs(config)
    _check_variants(config)
    _check_pair_uses(config)
    _check_corpus_files(config)
    _check_retrieval_sets(config, written)
    _check_seeds(config)
    _check_seed_range(config)
    _check_keep_fractions(config)
    _check_base_model(config)
    _check_source_refs(config)
    _check_epochs(config)
    for use in _uses(config):
        build(SECTION[use.section], use.path, use.data, use.before, use.after, use.sources)
    _check_crf_models(config)
    _check_tagsets(config)
    _check_scripts(config)
    _check_curation_labels(config)
    _check_lengths(config, written)
    _check_model_shape(config)
    _check_pq_m(config)
    _check_controls(config)
    _check_references(config)
    _check_evidence(config)


def _check_evidence(config: dict[str, Any]) -> None:
    """The declared comparison families (`evidence`, lem.evidence.compare): their settings (a family given
    replaces that family's default); every comparison of a family the config writes is one the run makes
    (`check_declared`: its variants exist, its tasks run); no pair declared twice, in either order."""
    try:
        ev = EvidenceSettings.from_dict(config.get("evidence"))
        check_declared(
            ev.families,
            list(config.get("variants") or []),
            _seedless(config),
            Run(config).rows,
            _tasks_off(config),
        )
    except ValueError as err:
        raise ConfigError(str(err)) from None


def _seedless(config: dict[str, Any]) -> dict[str, str]:
    """Row -> what it is, of every row of the tables without pre-training seeds: the controls (configured or
    not: their names are reserved) and every reference encoder."""
    rows = {f"control_{kind}": f"the {kind} control's row (controls.{kind})" for kind in CONTROL_KINDS}
    for name in config.get("reference_encoders") or {}:
        rows[f"ref_{name}"] = f"the row of reference encoder {name} (reference_encoders.{name})"
    return rows


def _tasks_off(config: dict[str, Any]) -> dict[str, str]:
    """Task -> why it does not run, of the tasks of lem.evidence.compare.TASKS this config runs no job of."""
    curation = config.get("curation") or {}
    off = {
        "mining": (not (config.get("mining") or {}).get("evalsets"), "mining.evalsets is empty"),
        "sentiment": (
            not (config.get("sentiment") or {}).get("datasets"),
            "no sentiment.datasets: none given, or `sentiment: {enabled: false}`",
        ),
        "curation": (
            not curation.get("corpora"),
            "no curation.corpora: none given, or `curation: {enabled: false}`",
        ),
        "nmt": (
            not (curation.get("nmt") or {}).get("pairs"),
            "no curation.nmt.pairs: none given, or `curation: {enabled: false}`",
        ),
    }
    return {task: why for task, (is_off, why) in off.items() if is_off}


def fill_families(config: dict[str, Any]) -> dict[str, Any]:
    """`evidence.families` as the report reads it (lem.evidence.compare.merged_families): a family given
    replaces that family's default, one left out keeps it; so the settings the report rule passes, and `lem
    plan settings report`, show every family. In place; returned."""
    evidence = config.get("evidence")
    if isinstance(evidence, dict) and isinstance(evidence.get("families"), dict):
        evidence["families"] = merged_families(evidence["families"])
    return config


def check_base_model(config: dict[str, Any]) -> dict[str, Any]:
    """The checks of the settings that depend on the base model (`_check_lengths`, `_check_model_shape`),
    for a model fetched after planning (a hub model: `lem plan check-model`, the job between its fetch and
    any training). Returns what was read; raises ConfigError naming the key, or the model's config.json
    when it cannot be read."""
    folder = base_model_folder(config)
    shape, positions = model_shape(config), model_positions(config)
    if shape is None or positions is None:
        raise ConfigError(
            f"base_model: {folder}/config.json: expected a model config with num_hidden_layers, hidden_size, "
            "num_attention_heads and max_position_embeddings (integers >= 1)"
        )
    _check_lengths(config)
    _check_model_shape(config)
    _check_pq_m(config)
    return {"model": folder, **shape._asdict(), "tokens": positions[0]}


def check_workflow_config(
    config: dict[str, Any], schema_path: str | Path, configfiles: Sequence[str | Path] | None = None
) -> dict[str, Any]:
    """Everything the workflow checks before its DAG is built, in order, as workflow/rules/common.smk and
    `lem plan cost` call it: a config file not read as Snakemake read it or a YTE template refused, the sections
    an overlay switched off (`switch_off`), the schema (its defaults filled in), the default comparison families
    an overlay left out (`fill_families`), `{data_root}` expanded, `check_config`.
    `configfiles`: the files Snakemake loaded, given by the workflow alone: Snakemake has rendered a YTE template
    among them, which is refused unless LEM_ALLOW_YTE=1 (`refuse_yte`), and a source the run would fetch must be
    pinned (lem.data.download: a hub commit, a file's sha256, or `allow_unpinned`). Without them (`lem plan`,
    which reads plain YAML and fetches nothing) a config holding the template key is refused.
    `config` is changed in place and returned; ConfigError in one line naming the key."""
    if configfiles is None:
        _check_yte_key(config)
    else:
        refuse_yte(configfiles)
    switch_off(config)
    written = written_config(config)
    validate_config(config, schema_path)
    fill_families(config)
    expand_data_root(config)
    check_config(config, written)
    if configfiles is not None:
        for problem in unpinned_hub_sources(config) + unpinned_url_sources(config):
            raise ConfigError(problem)
    return config


__all__ = [
    "ALLOW_YTE",
    "ANNOTATE",
    "DATA_ROOT",
    "LASER_DIM",
    "NAME_MAX",
    "NAME_RE",
    "ORACLE_LABEL",
    "SCRIPT_MIN_SHARE",
    "SCRIPT_SAMPLE_LINES",
    "SECTION",
    "SECTIONS",
    "SEED_MAX",
    "SWITCHED",
    "TRAINING",
    "WARN_ONLY",
    "YTE_KEY",
    "ConfigError",
    "ModelShape",
    "Section",
    "Use",
    "base_model_folder",
    "build",
    "check_base_model",
    "check_config",
    "check_workflow_config",
    "expand_data_root",
    "fill_families",
    "model_positions",
    "model_shape",
    "refuse_yte",
    "schema_refusal",
    "switch_off",
    "type_problems",
    "validate_config",
    "written_config",
]
