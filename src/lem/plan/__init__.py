"""`lem plan cost`: what the training jobs of a config cost before any of them runs.

One row per training job (every trained variant x scope x stage, plus the base model when it is trained
from scratch): training examples, subword tokens, optimizer steps, evaluations and checkpoints (from
`lem.pretrain.training_schedule`, the schedule training itself follows), peak disk and GPU-hours; totals
at the end. Nothing is trained or downloaded.

Counts come from the run's files where they exist and are estimates otherwise, and every row says which:
  features   the tokenized training set (results/features/...): examples and subwords exact
  lines      a text file of the run (corpus or configured input): examples exact, subwords estimated
  madlad     sources.madlad.sizes (sentences asked for; the extraction may find fewer)
  generate   corpus.generate sizes of the embedded generated world
  estimate   plan.estimates in the config
Subwords per example, where not counted: mono = min(s + 2, max_length), pair = min(2 s + 4, max_length), s =
plan.estimates.subwords_per_sentence. Examples seen = examples x epochs (max_steps: steps x batch).

GPU-hours = (training tokens + evaluation tokens / 3) / plan.tokens_per_second / 3600: evaluation is a
forward pass, a third of a training step's work per token; the validation set is masked once and scored
at every evaluation plus once more for the chosen checkpoint. The default 47,249 tokens/s is the
pipeline's own training stage (HF Trainer + LEM collator, the LM head on the labelled positions) on
xlm-roberta-base's architecture at batch 32, sentences of 30-100 subwords, bf16, measured on one H200 with
bench/gpu_training.py (2026-11-26; before the labelled-positions head: 12,291 on an H100). Job start-up,
model loading and the masking statistics are not counted. With `resources.gpu_share` N > 1 (N jobs on one
GPU) the rate is plan.shared_tokens_per_second, the measured aggregate of N jobs (bench/gpu_training.py
--concurrent N); while it is "pending", the one-job rate (no gain counted); the table says which.

The other GPU jobs of the config (`lem plan cost`'s second table, one row per kind and pair or dataset):
NER fine-tuning (`ner_model`), sentiment fine-tuning (every row x pre-training seed x `sentiment.seeds`),
NMT runs (every curation row and the random (and oracle) ranking at each kept share, plus no_filter, per
`curation.nmt.pairs`, per pre-training seed), embedding (every row's evaluation sets and both sides of every
curation corpus, per seed) and annotation (the monolingual and parallel text of each language whose backends
run a neural model on the GPU). Their items are counted as above (files of the run, the generated world's
sizes, `curation.max_pairs`, else `plan.estimates`), their tokens at plan.estimates.subwords_per_sentence
per sentence (capped at the job's max_length), and their GPU-hours at a throughput per kind
(`plan.throughput.<kind>`, else the built-in figure of `THROUGHPUT`, each marked `measured` or `estimate`):
training kinds count examples x epochs (NMT: max_steps x batch_size) x subwords, forward-only kinds
(embedding, annotation, NMT decoding at beam_size) a third of a training step's work per token.

Disk: a checkpoint holds the weights (4 bytes per parameter), AdamW's two moments (8 bytes per parameter),
the tokenizer and a little state; a job's peak = its peak number of checkpoints (Schedule.peak_checkpoints)
x checkpoint size + its final model (weights + tokenizer). The run's peak assumes one training job at a
time: every final model, plus the checkpoints of the largest job (checkpoints are deleted when a job
succeeds unless keep_checkpoints).

By concern: `config` (the cost table's figures, PlanError, the config as read), `counts` (the training sets'
counts), `model` (the model's size), `training` (the training jobs and the whole plan), `other` (the other GPU
jobs), `table` (the tables and files written); here the `lem plan` verbs.
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path
from typing import Any

from lem.config_check import ConfigError, check_base_model, check_workflow_config
from lem.core import numerics_probe
from lem.core.files import write_json
from lem.core.numerics import hardware_provenance
from lem.core.stage import Stage, UsageError, Verb, arg, json_object
from lem.evidence.power import PowerError
from lem.plan.config import (
    BYTES_PER_ANNOTATED_TOKEN,
    CKPT_STATE_BYTES,
    EVAL_COST,
    KNOWN_HUB,
    KNOWN_NMT_PARAMETERS,
    SCHEMA,
    STAGE_TOKENS_PER_SECOND,
    THROUGHPUT,
    TOKENIZER_BYTES_PER_ID,
    PlanError,
    deep_update,
    load_config,
    read_configfiles,
    validated,
)
from lem.plan.counts import Counter, Split, conll_sentences, count_lines, features_split
from lem.plan.model import ModelSize, base_folder, model_size, safetensors_parameters, tokenizer_vocab
from lem.plan.other import OtherJobs, Task
from lem.plan.power import check_arguments, run_power
from lem.plan.settings import SettingsTableError, rule_lines
from lem.plan.table import (
    COLUMNS,
    TASK_COLUMNS,
    TSV_FIELDS,
    fixed_width,
    gigabytes,
    hours,
    human,
    table,
    write_outputs,
)
from lem.plan.training import Job, make_plan, plan_job, training_rate


def cmd_power(a: argparse.Namespace) -> None:
    """`lem plan power` (lem.plan.power): the arguments checked first, then the config's `evidence` section."""
    check_arguments(a)
    raw: dict[str, Any] = {}
    if a.configfile:
        try:  # the workflow's own check, as `lem plan cost`: the same refusals, in one line
            config = check_workflow_config(read_configfiles(a.configfile), SCHEMA)
        except (PlanError, ConfigError) as err:
            raise PowerError(f"config: {err}") from None
        raw = config.get("evidence") or {}
    run_power(a, raw)


def cmd_settings(a: argparse.Namespace) -> None:
    """`lem plan settings RULE` (lem.plan.settings): the config keys of a rule's `--settings`, with their values
    in --configfile (checked as the workflow checks it) where given."""
    config = None
    if a.configfile:
        try:
            config = check_workflow_config(read_configfiles(a.configfile), a.schema)
        except ConfigError as err:
            raise PlanError(f"config: {err}") from None
    wildcards = {}
    for item in a.wildcards:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UsageError(f"{item!r}: expected a wildcard as NAME=VALUE (e.g. seed=1)")
        wildcards[name] = value
    try:
        print("\n".join(rule_lines(a.rule, config, wildcards)))
    except SettingsTableError as err:
        raise PlanError(str(err)) from None


def cmd_check_model(a: argparse.Namespace) -> None:
    """`lem plan check-model`: the config's checks that need the base model's files, on the run that fetches
    it (rule check_base_model, between the fetch and the first training job)."""
    write_json(a.out, check_base_model(a.config_json))


def cmd_numerics(a: argparse.Namespace) -> None:
    """`lem plan numerics` (lem.core.numerics_probe): this machine's probe of every kernel family installed, at
    `--threads`; with `--compare A B`, which kernels differ between two probes (`--out` files or metrics
    files); with `--compare A`, between A and this machine: whether a run here computes A's machine's numbers."""
    if a.compare and len(a.compare) > 2:
        raise UsageError(f"--compare takes one or two files, got {len(a.compare)}")
    if a.compare and len(a.compare) == 2:
        first, second = (numerics_probe.read_probe(path) for path in a.compare)
        sys.stdout.write(numerics_probe.compare_text(first, second, (a.compare[0], a.compare[1])))
        return
    against = numerics_probe.read_probe(a.compare[0]) if a.compare else None  # a bad file fails first
    here = numerics_probe.probe(list(numerics_probe.FAMILIES), threads=a.threads)
    hw = hardware_provenance()
    name = f"this machine ({hw['cpu']}, cpu_numerics {hw['cpu_numerics']})"
    if a.out:
        kept = ("machine", "cpu", "isa", "cpu_numerics", "pinned")
        write_json(a.out, {**here, "hardware": {k: hw[k] for k in kept}})
    if against is not None:
        sys.stdout.write(numerics_probe.compare_text(against, here, (a.compare[0], name)))
    else:
        sys.stdout.write(f"{name}\n" + numerics_probe.table(here))


def cmd_cost(a: argparse.Namespace) -> int:
    if bool(a.configfile) == bool(a.config_json):
        raise UsageError("give --configfile or --config-json (one of them)")
    if a.configfile:
        config = read_configfiles(a.configfile)
        title = f"Plan of {' + '.join(a.configfile)}"
    else:
        config = copy.deepcopy(a.config_json)
        title = "Plan of the run's config"
    if not Path(a.schema).is_file():
        raise PlanError(f"config schema {a.schema} not found (pass --schema)")
    try:  # the workflow's own check (workflow/rules/common.smk): the same refusals, in one line
        check_workflow_config(config, a.schema)
    except ConfigError as err:
        raise PlanError(f"config: {err}") from None
    plan = make_plan(config, a.directory)
    text = table(plan, title)
    write_outputs(plan, text, a.out)
    sys.stdout.write(text)
    return 0


STAGE = Stage(
    "plan",
    __doc__.splitlines()[0],
    (
        Verb("cost", "steps, evaluations, disk and GPU-hours of every training job; items, GPU-hours and disk of every other GPU job", cmd_cost, (
            arg("--configfile", nargs="+", help="config file(s), merged in order as by snakemake"),
            arg("--config-json", type=json_object, help="the config as one JSON object (what the `plan` rule passes)"),
            arg("--directory", default=".", help="the run's working directory (where results/ is)"),
            arg("--schema", default=str(SCHEMA), help="the config schema"),
            arg("--out", nargs="*", default=[], help=".txt (the table), .tsv and/or .json files"),
        ), errors=(PlanError,)),
        Verb("power", "seeds and test items each declared comparison needs, at its family's level, from a finished run",
             cmd_power, (
            arg("--results", default="results", help="the run's results folder (the metrics files of every task)"),
            arg("--configfile", nargs="+", help="the run's config file(s): its `evidence` section (families, alpha)"),
            arg("--difference", type=float, default=0.05,
                help="the true difference to detect on mining, sentiment and curation (a score in [0, 1])"),
            arg("--bleu-difference", type=float, default=1.0, help="the true NMT difference to detect, in BLEU points"),
            arg("--power", type=float, default=0.8, help="the power asked for, in (0, 1)"),
            arg("--alpha", type=float, default=None,
                help="family-wise level, in (0, 1) (default: the config's evidence.alpha, 0.05)"),
        ), errors=(PowerError,)),
        Verb("settings", "which config keys feed a rule's --settings (the settings table as data), with their values in a config",
             cmd_settings, (
            arg("rule", help="a rule with settings (lem.run.settings.SETTINGS), e.g. pretrain_mono, report"),
            arg("wildcards", nargs="*", help="the job's wildcards as NAME=VALUE (e.g. scope=tri tvariant=lem seed=1)"),
            arg("--configfile", nargs="+", help="config file(s), merged in order as by snakemake: each key's value"),
            arg("--schema", default=str(SCHEMA), help="the config schema"),
        ), errors=(PlanError,)),
        Verb("check-model", "check the config against the fetched base model, before any training", cmd_check_model, (
            arg("--config-json", type=json_object, required=True, help="the run's config (as the workflow has it)"),
            arg("--out", required=True, help="JSON record: the model's layers, hidden size, heads, tokens"),
        ), errors=("lem.config_check:ConfigError",)),
        Verb("numerics", "this machine's CPU kernels hashed (lem.core.numerics_probe), or the kernels that differ between two probes or metrics files",
             cmd_numerics, (
            arg("--compare", nargs="+", metavar="FILE",
                help="one or two probes (--out files) or metrics files: the kernels that differ (one: against this machine's)"),
            arg("--out", help="this machine's probe as JSON (with its CPU and pinned levels)"),
            arg("--threads", type=int, default=None, help="torch threads of the probe (default: torch's; another count may change a reduction)"),
        )),
    ),
)  # fmt: skip


__all__ = [
    "BYTES_PER_ANNOTATED_TOKEN",
    "CKPT_STATE_BYTES",
    "COLUMNS",
    "Counter",
    "EVAL_COST",
    "Job",
    "KNOWN_HUB",
    "KNOWN_NMT_PARAMETERS",
    "ModelSize",
    "OtherJobs",
    "PlanError",
    "SCHEMA",
    "STAGE",
    "STAGE_TOKENS_PER_SECOND",
    "Split",
    "TASK_COLUMNS",
    "THROUGHPUT",
    "TOKENIZER_BYTES_PER_ID",
    "TSV_FIELDS",
    "Task",
    "base_folder",
    "cmd_cost",
    "cmd_power",
    "cmd_settings",
    "conll_sentences",
    "count_lines",
    "deep_update",
    "features_split",
    "fixed_width",
    "gigabytes",
    "hours",
    "human",
    "load_config",
    "make_plan",
    "model_size",
    "plan_job",
    "read_configfiles",
    "safetensors_parameters",
    "table",
    "tokenizer_vocab",
    "training_rate",
    "validated",
]
