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
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from lem.core.stage import Stage, UsageError, Verb, arg, json_object
from lem.evidence.power import PowerError
from lem.plan_power import check_arguments, run_power
from lem.run import Run

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
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


@dataclass
class Split:
    """Examples of one training set: train and validation rows, their subwords when counted."""

    train: int
    valid: int
    train_tokens: float  # subwords of one pass over the train rows
    valid_tokens: float
    source: str  # features | lines | madlad | generate | estimate
    exact_tokens: bool

    def __add__(self, other: Split) -> Split:
        sources = dict.fromkeys(self.source.split("+") + other.source.split("+"))
        return Split(
            self.train + other.train,
            self.valid + other.valid,
            self.train_tokens + other.train_tokens,
            self.valid_tokens + other.valid_tokens,
            "+".join(sources),
            self.exact_tokens and other.exact_tokens,
        )


@dataclass
class Job:
    name: str
    variant: str
    scope: str
    stage: str
    examples: int
    valid_examples: int
    tokens_per_example: float
    epochs: float
    examples_seen: float
    tokens: float
    eval_tokens: float
    steps: int
    steps_per_epoch: int
    eval_every: int
    evaluations: int
    kept_checkpoints: int
    peak_checkpoints: int
    checkpoint_bytes: int
    final_model_bytes: int
    peak_disk_bytes: int
    kept_disk_bytes: int  # disk the job leaves behind: the model (+ kept checkpoints)
    gpu_hours: float
    counts: str


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

    from lem.config_check import switch_off

    if not schema.is_file():
        raise PlanError(f"config schema {schema} not found (run from the repository, or pass --schema)")
    config = switch_off(copy.deepcopy(config))  # an overlay's `enabled: false`, as the workflow reads it
    validate(config, str(schema), set_default=True)
    return config


# --- counting -----------------------------------------------------------------------------------------------


def count_lines(path: Path) -> int:
    with path.open("rb") as f:
        return sum(1 for line in f if line.strip())


def features_split(path: Path) -> Split:
    """Rows and subwords of a features folder (a DatasetDict with train and valid)."""
    import pyarrow.compute as pc
    from datasets import load_from_disk

    dd = load_from_disk(str(path))
    if "train" not in dd or "valid" not in dd:
        raise PlanError(f"{path}: expected a features folder with train and valid splits, found {list(dd)}")

    def tokens(ds) -> int:
        return int(pc.sum(pc.list_value_length(ds.data.column("input_ids"))).as_py() or 0)

    return Split(
        dd["train"].num_rows, dd["valid"].num_rows, tokens(dd["train"]), tokens(dd["valid"]), "features", True
    )


class Counter:
    """Counts of a config's training sets, looked up under `root` (the run's working directory)."""

    def __init__(self, config: dict[str, Any], root: Path):
        self.config, self.root = config, root
        self.estimates = config["plan"]["estimates"]
        self.max_length = int(config["pretrain"]["max_length"])
        sps = float(self.estimates["subwords_per_sentence"])
        self.mono_len = min(sps + 2, self.max_length)  # <s> A </s>
        self.pair_len = min(2 * sps + 4, self.max_length)  # <s> A </s></s> B </s>
        self._cache: dict[str, Split] = {}

    def path(self, rel: str) -> Path:
        return self.root / rel

    def generate(self) -> dict[str, Any] | None:
        if self.config["corpus"]["source"] != "generate":
            return None
        from lem.corpus.generate import GenerateSettings

        return dataclasses.asdict(GenerateSettings.from_dict(self.config["corpus"].get("generate")))

    def mono(self, lang: str) -> Split:
        if f"mono:{lang}" not in self._cache:
            self._cache[f"mono:{lang}"] = self._mono(lang)
        return self._cache[f"mono:{lang}"]

    def _mono_rows(self, n: int, source: str) -> Split:
        from lem.features import mono_split

        train, valid = mono_split(
            n, float(self.config["pretrain"]["valid_fraction"]), int(self.config["seed"])
        )
        return Split(
            len(train), len(valid), len(train) * self.mono_len, len(valid) * self.mono_len, source, False
        )

    def _mono(self, lang: str) -> Split:
        feats = self.path(f"results/features/mono/{lang}")
        if feats.is_dir():
            return features_split(feats)
        corpus = self.config["corpus"]
        candidates = [f"results/corpus/guarded/mono/{lang}.txt", f"results/corpus/mono/{lang}.txt"]
        configured = (
            corpus.get("files", {}).get("mono", {}).get(lang) if corpus["source"] == "files" else None
        )
        if configured:
            candidates.append(configured)
        for rel in candidates:
            if self.path(rel).is_file():
                return self._mono_rows(count_lines(self.path(rel)), "lines")
        madlad = self.config["sources"].get("madlad", {})
        if configured and configured.startswith("resources/madlad/") and lang in madlad.get("sizes", {}):
            return self._mono_rows(int(madlad["sizes"][lang]), "madlad")
        if lang in self.estimates["mono_sentences"]:
            return self._mono_rows(int(self.estimates["mono_sentences"][lang]), "estimate")
        gen = self.generate()
        if gen is not None:
            return self._mono_rows(int(gen["mono_sentences"]), "generate")
        raise PlanError(
            f"no count for the monolingual text of {lang!r}: none of {candidates} exists and no size is "
            f"configured; set plan.estimates.mono_sentences.{lang}"
        )

    def para(self, pair: str) -> Split:
        if f"para:{pair}" not in self._cache:
            self._cache[f"para:{pair}"] = self._para(pair)
        return self._cache[f"para:{pair}"]

    def _pairs(self, train: int, valid: int, source: str) -> Split:
        return Split(train, valid, train * self.pair_len, valid * self.pair_len, source, False)

    def _para(self, pair: str) -> Split:
        feats = self.path(f"results/features/para/{pair}")
        if feats.is_dir():
            return features_split(feats)
        train_rel = [f"results/corpus/guarded/para/{pair}.train.tsv", f"results/corpus/para/{pair}.train.tsv"]
        valid_rel = self.path(f"results/corpus/para/{pair}.valid.tsv")
        for rel in train_rel:
            if self.path(rel).is_file() and valid_rel.is_file():
                return self._pairs(count_lines(self.path(rel)), count_lines(valid_rel), "lines")
        corpus = self.config["corpus"]
        spec = corpus.get("files", {}).get("para", {}).get(pair) if corpus["source"] == "files" else None
        valid_est = self.estimates["para_valid_pairs"].get(pair)
        if spec:
            train_files = [spec["train"]] if isinstance(spec["train"], str) else list(spec["train"])
            valid_files = (
                [spec["valid"]] if isinstance(spec.get("valid"), str) else list(spec.get("valid", []))
            )
            if all(self.path(f).is_file() for f in train_files + valid_files):
                # duplicates are dropped when the files are merged: an upper bound
                train = sum(count_lines(self.path(f)) for f in train_files)
                valid = sum(count_lines(self.path(f)) for f in valid_files)
                if not valid_files and spec.get("valid_size"):  # held out of train (lem data pairs)
                    train, valid = train - int(spec["valid_size"]), int(spec["valid_size"])
                return self._pairs(train, valid, "lines")
            if not valid_files and spec.get("valid_size"):
                valid_est = int(spec["valid_size"])
        if pair in self.estimates["para_pairs"]:
            if valid_est is None:
                raise PlanError(
                    f"plan.estimates.para_pairs.{pair} is set but not the size of its validation set: "
                    f"set plan.estimates.para_valid_pairs.{pair}"
                )
            return self._pairs(int(self.estimates["para_pairs"][pair]), int(valid_est), "estimate")
        gen = self.generate()
        if gen is not None:
            return self._pairs(int(gen["para_train"]), int(gen["para_valid"]), "generate")
        raise PlanError(
            f"no count for the parallel text of {pair!r}: its files do not exist yet; set "
            f"plan.estimates.para_pairs.{pair} and plan.estimates.para_valid_pairs.{pair}"
        )


# --- the model ----------------------------------------------------------------------------------------------


def base_folder(config: dict[str, Any], root: Path) -> Path:
    """The base model's folder under `root` (lem.run.Run.base_model_dir: the first seed's when trained from
    scratch)."""
    folder = Run(config).base_model_dir()
    if folder is None:
        raise PlanError("base_model: `source: pretrained` needs `path` or `hub` ({repo, revision})")
    return root / folder


def safetensors_parameters(path: Path) -> int:
    """Parameters stored in a safetensors file (its JSON header only is read)."""
    with path.open("rb") as f:
        size = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(size))
    return sum(math.prod(t["shape"]) for k, t in header.items() if k != "__metadata__")


def tokenizer_vocab(folder: Path) -> int | None:
    path = folder / "tokenizer.json"
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    return len(data["model"]["vocab"]) + sum(
        1 for t in data.get("added_tokens", []) if t["id"] >= len(data["model"]["vocab"])
    )


@dataclass
class ModelSize:
    parameters: int
    tokenizer_bytes: int
    source: str  # how the size was found
    name: str


def model_size(config: dict[str, Any], root: Path) -> ModelSize:
    """Parameters of the models that train (all variants start from the base model, so all share them)."""
    from lem.stand_in import SIZES, xlmr_mlm_parameters

    bm = config["base_model"]
    folder = base_folder(config, root)
    tok_files = [p for p in folder.glob("*") if p.name.startswith(("tokenizer", "sentencepiece", "special"))]
    tok_bytes = sum(p.stat().st_size for p in tok_files if p.is_file())
    weights = folder / "model.safetensors"
    if weights.is_file():
        return ModelSize(safetensors_parameters(weights), tok_bytes, f"{weights} (header)", str(folder))
    if bm["source"] == "scratch":
        from lem.pretrain import ModelSettings

        arch = ModelSettings.from_dict(bm.get("model"))
        trained_vocab = None
        if config["tokenizer"]["source"] == "train":
            trained_vocab = tokenizer_vocab(root / "results/tokenizer")
        vocab = trained_vocab or int(config["tokenizer"]["vocab_size"])
        how = "results/tokenizer" if trained_vocab else "tokenizer.vocab_size (no tokenizer trained yet)"
        positions = int(config["pretrain"]["max_length"]) + 2  # built for pretrain.max_length (pretrain_base)
        params = xlmr_mlm_parameters(
            vocab, arch.hidden_size, arch.num_hidden_layers, arch.intermediate_size, positions
        )
        return ModelSize(
            params, vocab * TOKENIZER_BYTES_PER_ID, f"base_model.model, vocabulary of {how}", "scratch"
        )
    if bm["source"] == "stand_in":
        size = bm["stand_in"]["size"]
        arch = dict(SIZES[size])
        vocab = arch.pop("vocab_size") or int(bm["stand_in"]["vocab_size"])
        tok = int(bm["stand_in"]["vocab_size"]) * TOKENIZER_BYTES_PER_ID
        return ModelSize(
            xlmr_mlm_parameters(vocab, **arch), tok, f"lem.stand_in.SIZES[{size!r}]", f"stand-in {size}"
        )
    config_json = folder / "config.json"
    if config_json.is_file():
        cfg = json.loads(config_json.read_text(encoding="utf-8"))
        if cfg.get("model_type") not in ("xlm-roberta", "roberta"):
            raise PlanError(f"{config_json}: cannot size model_type {cfg.get('model_type')!r}")
        return ModelSize(xlmr_mlm_parameters(**cfg), tok_bytes, str(config_json), str(folder))
    repo = (bm.get("hub") or {}).get("repo")
    if repo in KNOWN_HUB:
        arch = dict(SIZES[KNOWN_HUB[repo]])
        vocab = arch.pop("vocab_size")
        return ModelSize(
            xlmr_mlm_parameters(vocab, **arch), vocab * TOKENIZER_BYTES_PER_ID, f"{repo}'s architecture", repo
        )
    raise PlanError(
        f"cannot size the base model: {folder} has no model.safetensors or config.json yet and "
        f"{repo or bm.get('path')!r} is not a known architecture; fetch it first"
    )


# --- the plan -----------------------------------------------------------------------------------------------


def plan_job(
    name: str,
    variant: str,
    scope: str,
    stage: str,
    split: Split,
    training: dict[str, Any],
    size: ModelSize,
    tps: float,
) -> Job:
    from lem.pretrain import TrainSettings, stage_schedule

    t = TrainSettings.from_dict(training)  # what the training job itself parses
    sched = stage_schedule(split.train, t)
    per_example = split.train_tokens / split.train
    if t.max_steps > 0:
        seen = float(sched.steps * t.batch_size * t.grad_accum)
    else:
        seen = split.train * float(t.epochs)
    tokens = seen * per_example
    cap = t.valid_examples
    valid = split.valid if cap is None else min(split.valid, int(cap))
    valid_per_example = split.valid_tokens / split.valid if split.valid else per_example
    eval_tokens = (sched.evaluations + 1) * valid * valid_per_example
    weights = 4 * size.parameters
    final = weights + size.tokenizer_bytes
    ckpt = weights + 8 * size.parameters + size.tokenizer_bytes + CKPT_STATE_BYTES
    kept = final + (sched.kept_checkpoints * ckpt if t.keep_checkpoints else 0)
    counts = split.source + ("" if split.exact_tokens else "*")
    return Job(
        name=name,
        variant=variant,
        scope=scope,
        stage=stage,
        examples=split.train,
        valid_examples=valid,
        tokens_per_example=per_example,
        epochs=float(t.epochs),
        examples_seen=seen,
        tokens=tokens,
        eval_tokens=eval_tokens,
        steps=sched.steps,
        steps_per_epoch=sched.steps_per_epoch,
        eval_every=sched.eval_every,
        evaluations=sched.evaluations,
        kept_checkpoints=sched.kept_checkpoints,
        peak_checkpoints=sched.peak_checkpoints,
        checkpoint_bytes=ckpt,
        final_model_bytes=final,
        peak_disk_bytes=sched.peak_checkpoints * ckpt + final,
        kept_disk_bytes=kept,
        gpu_hours=(tokens + EVAL_COST * eval_tokens) / tps / 3600,
        counts=counts,
    )


def make_plan(config: dict[str, Any], root: str | Path = ".") -> dict[str, Any]:
    """Every training job of a validated config (schema defaults filled), with totals and notes."""
    root = Path(root)
    run = Run(config)
    counter = Counter(config, root)
    size = model_size(config, root)
    # sharing a GPU (lem.core.gpu_share): N jobs at once, each N x as long as its share of the GPU's time
    share = int(config["resources"].get("gpu_share", 1)) if int(config["resources"]["gpu_training"]) else 1
    tps, basis = training_rate(config["plan"], share)
    jobs: list[Job] = []
    for job in run.training_jobs():  # the jobs of rules pretrain_base, pretrain_mono and pretrain_para
        if job.stage == "base":
            parts, training = [counter.mono(lang) for lang in run.langs], run.base_training(job.seed)
        else:
            if job.stage == "mono":
                parts = [counter.mono(lang) for lang in run.scope_langs(job.scope)]
            else:
                parts = [counter.para(pair) for pair in run.scope_pairs(job.scope)]
            training = run.stage_training(job.scope, job.stage, job.seed)
        split = sum(parts[1:], parts[0])
        jobs.append(plan_job(job.name, job.variant, job.scope, job.stage, split, training, size, tps))
    tasks = OtherJobs(config, root, counter, size).all()
    transient = max((j.peak_disk_bytes - j.final_model_bytes for j in jobs), default=0)
    totals = {
        "jobs": len(jobs),
        "examples_seen": sum(j.examples_seen for j in jobs),
        "tokens": sum(j.tokens for j in jobs),
        "eval_tokens": sum(j.eval_tokens for j in jobs),
        "steps": sum(j.steps for j in jobs),
        "evaluations": sum(j.evaluations for j in jobs),
        "final_disk_bytes": sum(j.kept_disk_bytes for j in jobs),
        "peak_disk_bytes": sum(j.kept_disk_bytes for j in jobs) + transient,
        "gpu_hours": sum(j.gpu_hours for j in jobs),
        "other_jobs": sum(t.jobs for t in tasks),
        "other_gpu_hours": sum(t.gpu_hours for t in tasks),
        "other_disk_bytes": sum(t.disk_bytes for t in tasks),
    }
    totals["all_gpu_hours"] = totals["gpu_hours"] + totals["other_gpu_hours"]
    notes = []
    runtime = int(config["resources"]["runtime_training"])
    long_jobs = [j for j in jobs if j.gpu_hours * share * 60 > runtime]
    if long_jobs:
        worst = max(long_jobs, key=lambda j: j.gpu_hours)
        hours_ = worst.gpu_hours * share
        notes.append(
            f"{len(long_jobs)} of {len(jobs)} jobs need more than resources.runtime_training ({runtime} min); "
            f"the longest, {worst.name}, {hours_:.1f} h, needs {math.ceil(hours_ * 60 / runtime)} "
            "allocations: it resumes from its last checkpoint after a time-out when resubmitted (--retries)"
        )
    if share > 1:
        notes.append(
            f"resources.gpu_share = {share}: {share} training jobs share a GPU; the GPU-hours are the GPU's time at "
            f"{basis}; each job runs {share} x its GPU-hours (measure the aggregate with bench/gpu_training.py "
            f"--concurrent {share}, scripts/gpu-check.sh); the other GPU jobs are counted at their one-job rates"
        )
    aliases = {v: m for v, m in run.model_of.items() if v != m}
    if aliases:
        shared = ", ".join(f"{v} uses {m}'s" for v, m in aliases.items())
        notes.append(
            f"no jobs for variants whose masking equals an earlier one's (lem.masking.collate.variant_aliases): {shared} "
            "models, evaluated under their own names"
        )
    if any(j.counts.endswith("*") for j in jobs):
        notes.append(
            "* subwords estimated at plan.estimates.subwords_per_sentence = "
            f"{config['plan']['estimates']['subwords_per_sentence']:g} per sentence (capped at "
            f"pretrain.max_length = {config['pretrain']['max_length']}); rerun after `features` for exact counts"
        )
    if int(config["resources"]["gpu_training"]) == 0:
        notes.append(
            "resources.gpu_training is 0: these jobs run on CPU; the hours assume plan.tokens_per_second"
        )
    if any(t.counts.endswith("*") for t in tasks):
        notes.append(
            "* in the other GPU jobs: sentences at plan.estimates.subwords_per_sentence subwords; items from "
            "plan.estimates where marked estimate, the cap curation.max_pairs where max_pairs (an upper bound)"
        )
    base = "" if config["base_model"]["source"] == "scratch" else ", the base model's download"
    notes.append(
        f"not counted: job start-up and model loading, mining and curation's ranking (CPU unless "
        f"mining.settings.device; seconds on a GPU), CRF and lexicon annotation (CPU){base} and the features"
    )
    return {
        "tokens_per_second": tps,
        "tokens_per_second_basis": basis,
        "model": dataclasses.asdict(size),
        "jobs": [dataclasses.asdict(j) for j in jobs],
        "tasks": [dataclasses.asdict(t) for t in tasks],
        "totals": totals,
        "notes": notes,
    }


def training_rate(plan: dict[str, Any], share: int = 1) -> tuple[float, str]:
    """Tokens per second of the GPU behind the pre-training GPU-hours, and which figure it is.

    One job per GPU: `plan.tokens_per_second`. `share` (resources.gpu_share) > 1 jobs on one GPU: the
    measured aggregate rate of that many jobs together, `plan.shared_tokens_per_second`; while that is
    "pending" (not measured), the per-job rate, i.e. sharing counted as no gain."""
    tps = float(plan["tokens_per_second"])
    if share <= 1:
        return tps, "plan.tokens_per_second"
    shared = plan.get("shared_tokens_per_second", "pending")
    if shared == "pending":
        return tps, (
            f"plan.tokens_per_second = {tps:,.0f} tokens/s, the one-job rate: plan.shared_tokens_per_second (the "
            f"aggregate of {share} jobs on one GPU) is pending, so sharing is counted as no gain"
        )
    return float(shared), (
        f"plan.shared_tokens_per_second = {float(shared):,.0f} tokens/s, the measured aggregate of {share} jobs on "
        f"one GPU (one job alone: plan.tokens_per_second = {tps:,.0f})"
    )


# --- the other GPU jobs -------------------------------------------------------------------------------------


@dataclass
class Task:
    """One row of the other GPU jobs: `jobs` jobs of one kind, with their items and tokens in all."""

    kind: str  # ner | sentiment | nmt | embedding | annotation
    name: str
    jobs: int
    items: int  # examples (training kinds) or sentences / sides of pairs (forward kinds), per job
    unit: str
    tokens: float  # work of all the jobs, in tokens at the kind's training rate (forward: a third)
    tokens_per_second: float
    basis: str  # measured | estimate | plan.throughput.<kind>
    gpu_hours: float
    disk_bytes: int
    counts: str


def conll_sentences(path: Path) -> int:
    """Sentences of a CoNLL file: blocks of non-empty lines."""
    n, inside = 0, False
    with path.open("rb") as f:
        for line in f:
            blank = not line.strip()
            n += not blank and not inside
            inside = not blank
    return n


class OtherJobs:
    """The rows of the other GPU jobs of a validated config, counted under `root`."""

    def __init__(self, config: dict[str, Any], root: Path, counter: Counter, size: ModelSize):
        self.config, self.root, self.counter, self.size = config, root, counter, size
        self.est = config["plan"]["estimates"]
        self.sps = float(self.est["subwords_per_sentence"])
        self.gen = counter.generate()
        self.throughput = config["plan"].get("throughput") or {}
        self.run = Run(config)

    def rate(self, kind: str) -> tuple[float, str]:
        if kind in self.throughput:
            return float(self.throughput[kind]), f"plan.throughput.{kind}"
        tps, basis = THROUGHPUT[kind]
        return float(tps), basis.split(":")[0]

    def task(self, kind, name, jobs, items, unit, tokens, disk, counts, exact=False) -> Task:
        tps, basis = self.rate(kind)
        return Task(kind, name, jobs, int(items), unit, tokens, tps, basis, tokens / tps / 3600, int(disk),
                    counts + ("" if exact else "*"))  # fmt: skip

    def sentences(self, rel: str, generated: float | None, key: str) -> tuple[float, str]:
        """Lines of the run's file `rel`, else the generated world's size, else plan.estimates.<key>."""
        if self.root.joinpath(rel).is_file():
            return count_lines(self.root / rel), "lines"
        if generated is not None:
            return generated, "generate"
        return self.est[key], "estimate"

    def row_seeds(self, row: str) -> int:
        return len(self.run.row_seeds(row))

    # one method per kind, each a list of Task
    def ner(self) -> list[Task]:
        spec = self.config.get("ner_model")
        if not spec:
            return []
        from lem.annotate.hf_ner import TrainNERSettings

        t = TrainNERSettings.from_dict(spec.get("settings"))
        train = self.root / spec["train"]
        if train.is_file():
            n, counts = conll_sentences(train), "lines"
        else:
            n, counts = self.est["ner_sentences"], "estimate"
        per = min(self.sps + 2, t.max_length)
        tokens = n * float(t.epochs) * per
        disk = 4 * self.size.parameters + self.size.tokenizer_bytes  # the encoder (+ a small head)
        return [self.task("ner", "ner/model", 1, n, "sentences", tokens, disk, counts)]

    def sentiment(self) -> list[Task]:
        from lem.sentiment import SentimentSettings

        sent = self.config.get("sentiment") or {}
        t = SentimentSettings.from_dict(sent.get("training"))
        per = min(self.sps + 2, t.max_length or 128)
        jobs = sum(self.row_seeds(v) for v in self.config["variants"]) * len(sent.get("seeds") or [1, 2, 3])
        out = []
        for name in sent.get("datasets") or {}:
            gen = None if self.gen is None else 0.8 * self.gen["sentiment_examples"]
            n, counts = self.sentences(
                f"results/eval/prepared/sentiment/{name}/train.tsv", gen, "sentiment_examples"
            )
            tokens = jobs * n * float(t.epochs) * per
            out.append(self.task("sentiment", f"sentiment/{name}", jobs, n, "examples", tokens, 0, counts))
        return out

    def nmt(self) -> list[Task]:
        from lem.nmt.settings import NMTSettings

        nmt = (self.config.get("curation") or {}).get("nmt") or {}
        if not nmt.get("pairs"):
            return []
        t = NMTSettings.from_dict(nmt.get("settings"))
        per = 2 * min(self.sps + 2, t.max_length)  # source + target
        params = self.nmt_parameters(t)
        runs = self.run.nmt_runs()
        out = []
        for pair in nmt["pairs"]:
            n_runs = sum(1 for _, p, _, _ in runs if p == pair)
            held, counts = self.sentences(
                f"results/eval/prepared/nmt/{pair}/valid.tsv", None, "nmt_heldout_sentences"
            )
            test, _ = self.sentences(
                f"results/eval/prepared/nmt/{pair}/test.tsv", None, "nmt_heldout_sentences"
            )
            if t.max_steps > 0:
                train_tokens = t.max_steps * t.batch_size * per
            else:  # epochs over the kept share: a cap of the corpus (max_pairs) or its estimate
                kept, _ = self.curation_pairs(pair)
                train_tokens = float(t.epochs) * kept * per
            # validation loss at every evaluation (forward), the test set translated at beam_size (forward)
            eval_tokens = t.evaluations * held * per + test * per * t.beam_size
            tokens = n_runs * (train_tokens + EVAL_COST * eval_tokens)
            disk = n_runs * (4 * params if params else 0)
            out.append(self.task("nmt", f"nmt/{pair}", n_runs, t.max_steps * t.batch_size, "pairs seen", tokens, disk,
                                 "steps" if t.max_steps > 0 else counts, exact=False))  # fmt: skip
        return out

    def nmt_parameters(self, t) -> int | None:
        if t.backend == "scratch":  # a Marian Transformer: shared embeddings, encoder and decoder layers
            h, f, n = t.hidden, t.ffn, t.layers
            return t.vocab_size * h + n * (4 * h * h + 2 * h * f) + n * (8 * h * h + 2 * h * f)
        model = t.model or ""
        local = self.root / model / "model.safetensors"
        if local.is_file():
            return safetensors_parameters(local)
        return KNOWN_NMT_PARAMETERS.get(model)

    def curation_pairs(self, pair: str) -> tuple[float, str]:
        rel = f"results/eval/prepared/curation/{pair}/pairs.tsv"
        if self.root.joinpath(rel).is_file():
            return count_lines(self.root / rel), "lines"
        cap = (self.config.get("curation") or {}).get("max_pairs")
        if cap:
            return float(cap), "max_pairs"
        if self.gen is not None:
            return float(self.gen["noisy_pairs"]), "generate"
        return float(self.est["curation_pairs"]), "estimate"

    def embedding(self) -> list[Task]:
        emb = self.config["embedding"]
        per = min(self.sps + 2, int(emb.get("max_length") or 128))
        rows = self.run.curation_rows  # the rows that embed (the controls embed no model)
        out = []
        hidden_bytes = 4 * self.hidden_size()
        for e, spec in (self.config["mining"].get("evalsets") or {}).items():  # every row's seeds
            jobs = sum(self.row_seeds(r) for r in rows)
            gen = None
            if self.gen is not None:
                g = self.gen
                gen = g["news_documents"] * (
                    (g["news_aligned_min"] + g["news_aligned_max"]) / 2
                    + (g["news_extra_min"] + g["news_extra_max"]) / 2
                )
            n, counts = 0.0, "lines"
            for pair in spec["pairs"]:
                for lang in pair.split("-"):
                    c, how = self.sentences(
                        f"results/eval/prepared/{e}/{pair}/{lang}.tsv", gen, "eval_sentences"
                    )
                    n, counts = n + c, how
            out.append(self.task("embedding", f"embed/{e}", jobs, n, "sentences", EVAL_COST * jobs * n * per,
                                 jobs * n * hidden_bytes, counts))  # fmt: skip
        for pair in (self.config.get("curation") or {}).get("corpora") or {}:
            n, counts = self.curation_pairs(pair)
            n *= 2  # both sides
            jobs = sum(self.row_seeds(r) for r in rows)  # every row's seeds, as for the evaluation sets
            out.append(self.task("embedding", f"embed/curation/{pair}", jobs, n, "sentences",
                                 EVAL_COST * jobs * n * per, jobs * n * hidden_bytes, counts))  # fmt: skip
        return out

    def hidden_size(self) -> int:
        """Floats per embedding: the base model's hidden size (every row is stored as float32)."""
        from lem.stand_in import SIZES

        bm = self.config["base_model"]
        cfg = base_folder(self.config, self.root) / "config.json"
        if cfg.is_file():
            return int(json.loads(cfg.read_text(encoding="utf-8"))["hidden_size"])
        if bm["source"] == "scratch":
            from lem.pretrain import ModelSettings

            return ModelSettings.from_dict(bm.get("model")).hidden_size
        if bm["source"] == "stand_in":
            return SIZES[bm["stand_in"]["size"]]["hidden_size"]
        return SIZES["base"]["hidden_size"]  # a known hub architecture (model_size has checked it)

    def annotation(self) -> list[Task]:
        out = []
        gpus = int(self.config["resources"].get("gpu_annotation", 0))
        for lang in self.config["languages"]:
            s = self.config["annotation"].get(lang, {})
            neural = any(
                isinstance(task, dict)
                and task.get("backend") in ("hf_ner", "stanza")
                and task.get("device", "auto") != "cpu"
                for task in (s.get("pos"), s.get("ner"))
            )
            if not neural or gpus == 0:
                continue
            mono = self.counter.mono(lang)
            n = float(mono.train + mono.valid)
            counts = mono.source
            for pair in self.config["pairs"]:
                if lang in pair.split("-"):
                    para = self.counter.para(pair)
                    n += para.train + para.valid
            per = min(self.sps + 2, 512)
            tokens = EVAL_COST * n * per
            out.append(self.task("annotation", f"annotate/{lang}", 1, n, "sentences", tokens,
                                 n * per * BYTES_PER_ANNOTATED_TOKEN, counts))  # fmt: skip
        return out

    def all(self) -> list[Task]:
        return self.ner() + self.sentiment() + self.nmt() + self.embedding() + self.annotation()


# --- output -------------------------------------------------------------------------------------------------


def gigabytes(n: float) -> str:
    return f"{n / 1e9:,.1f} GB" if n >= 1e9 else f"{n / 1e6:,.1f} MB"


def hours(h: float) -> str:
    return f"{h:,.1f}" if h >= 10 else f"{h:.2f}"


def human(n: float) -> str:
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n:.0f}"


COLUMNS = [  # header, width, cell
    ("job", -22, lambda j: j["name"]),
    ("examples", 10, lambda j: f"{j['examples']:,}"),
    ("sub/ex", 7, lambda j: f"{j['tokens_per_example']:.1f}"),
    ("epochs", 6, lambda j: f"{j['epochs']:g}"),
    ("tokens", 9, lambda j: human(j["tokens"])),
    ("steps", 10, lambda j: f"{j['steps']:,}"),
    ("eval every", 10, lambda j: f"{j['eval_every']:,}"),
    ("evals", 6, lambda j: f"{j['evaluations']:,}"),
    ("ckpts", 5, lambda j: f"{j['kept_checkpoints']}/{j['peak_checkpoints']}"),
    ("peak disk", 9, lambda j: gigabytes(j["peak_disk_bytes"])),
    ("GPU-h", 8, lambda j: hours(j["gpu_hours"])),
    ("counts", -10, lambda j: j["counts"]),
]


TASK_COLUMNS = [  # header, width, cell
    ("other GPU jobs", -22, lambda t: t["name"]),
    ("jobs", 5, lambda t: f"{t['jobs']:,}"),
    ("items/job", 10, lambda t: f"{t['items']:,}"),
    ("unit", -10, lambda t: t["unit"]),
    ("tokens", 9, lambda t: human(t["tokens"])),
    ("tokens/s", 8, lambda t: f"{t['tokens_per_second']:,.0f}"),
    ("basis", -9, lambda t: t["basis"]),
    ("GPU-h", 8, lambda t: hours(t["gpu_hours"])),
    ("disk", 9, lambda t: gigabytes(t["disk_bytes"])),
    ("counts", -10, lambda t: t["counts"]),
]


def fixed_width(columns: list, records: list[dict], total: list[str]) -> list[str]:
    """Header, rule, one line per record, rule, total; the first column as wide as its longest cell."""
    width = max([len(columns[0][2](r)) for r in records] + [len(total[0])])
    columns = [(columns[0][0], -max(width, len(columns[0][0])), columns[0][2]), *columns[1:]]

    def row(cells: list[str]) -> str:
        parts = [c.ljust(-w) if w < 0 else c.rjust(w) for c, (_, w, _) in zip(cells, columns, strict=True)]
        return "  ".join(parts).rstrip()

    rule = row(["-" * abs(w) for _, w, _ in columns])
    lines = [row([h for h, _, _ in columns]), rule]
    lines += [row([cell(r) for _, _, cell in columns]) for r in records]
    return [*lines, rule, row(total)]


def table(plan: dict[str, Any], title: str = "") -> str:
    """The plan as a fixed-width table, totals and notes."""
    import textwrap

    t = plan["totals"]
    total_name = f"total ({t['jobs']} jobs)"
    width = max([len(j["name"]) for j in plan["jobs"]] + [len(total_name)])
    columns = [(COLUMNS[0][0], -width, COLUMNS[0][2]), *COLUMNS[1:]]

    def row(cells: list[str]) -> str:
        parts = [c.ljust(-w) if w < 0 else c.rjust(w) for c, (_, w, _) in zip(cells, columns, strict=True)]
        return "  ".join(parts).rstrip()

    def wrap(text: str) -> list[str]:
        return textwrap.wrap(text, width=110, subsequent_indent="  ", break_on_hyphens=False)

    model = plan["model"]
    lines = [title] if title else []
    lines += wrap(
        f"model: {model['name']}, {model['parameters']:,} parameters ({model['source']}); "
        f"throughput {plan['tokens_per_second']:,.0f} tokens/s "
        + (
            "(plan.tokens_per_second)"
            if plan.get("tokens_per_second_basis", "plan.tokens_per_second") == "plan.tokens_per_second"
            else f"({plan['tokens_per_second_basis']})"
        )
    )
    rule = row(["-" * abs(w) for _, w, _ in columns])
    lines += ["", row([h for h, _, _ in columns]), rule]
    lines += [row([cell(job) for _, _, cell in columns]) for job in plan["jobs"]]
    total = [total_name, "", "", "", human(t["tokens"]), f"{t['steps']:,}", "", f"{t['evaluations']:,}", "",
             gigabytes(t["peak_disk_bytes"]), hours(t["gpu_hours"]), ""]  # fmt: skip
    lines += [rule, row(total), ""]
    tasks = plan.get("tasks") or []
    if tasks:
        other = [f"total ({t['other_jobs']:,} jobs)", "", "", "", human(sum(x["tokens"] for x in tasks)), "", "",
                 hours(t["other_gpu_hours"]), gigabytes(t["other_disk_bytes"]), ""]  # fmt: skip
        lines += [*fixed_width(TASK_COLUMNS, tasks, other), ""]
    lines += wrap(
        f"GPU time: {hours(t['gpu_hours'])} GPU-hours of pre-training (evaluation included: "
        f"{human(t['eval_tokens'])} tokens at a third of the cost) + {hours(t['other_gpu_hours'])} of the other "
        f"{t['other_jobs']:,} GPU jobs = {hours(t['all_gpu_hours'])} GPU-hours = {t['all_gpu_hours'] / 24:,.1f} "
        "GPU-days on one GPU, one job at a time"
    )
    lines += wrap(
        f"disk: {gigabytes(t['final_disk_bytes'])} of models at the end; peak "
        f"{gigabytes(t['peak_disk_bytes'])} with one training job at a time (its checkpoints on top); the other "
        f"jobs leave {gigabytes(t['other_disk_bytes'])} (models, embeddings, annotations)"
    )
    lines += wrap(
        "columns: sub/ex = subwords per example; ckpts = checkpoints kept / at most on disk; peak disk = "
        "the job's checkpoints + its model; counts: features (exact), lines (files of the run), madlad "
        "(sources.madlad.sizes), generate (corpus.generate), estimate (plan.estimates); other GPU jobs: "
        "items/job = examples (training), sentences embedded or annotated, or pairs seen (NMT: max_steps x "
        "batch_size); tokens = the work of all its jobs at the training rate (forward passes count a third); "
        "basis of tokens/s: measured, estimate (lem.plan.THROUGHPUT) or plan.throughput.<kind>"
    )
    for note in plan["notes"]:
        lines += wrap(f"note: {note}")
    return "\n".join(lines) + "\n"


TSV_FIELDS = [f.name for f in dataclasses.fields(Job)]


def write_outputs(plan: dict[str, Any], text: str, outs: list[str]) -> None:
    """Each of `outs` by its suffix: .json (everything), .tsv (one row per job), .txt (the table)."""
    from lem.core.files import write_json, write_text

    for out in outs:
        if out.endswith(".txt"):
            write_text(out, text)
        elif out.endswith(".json"):
            write_json(out, plan)
        elif out.endswith(".tsv"):
            rows = ["\t".join(TSV_FIELDS)]
            for job in plan["jobs"]:
                rows.append("\t".join("" if job[f] is None else str(job[f]) for f in TSV_FIELDS))
            write_text(out, "\n".join(rows) + "\n")
        else:
            raise PlanError(f"--out {out}: give a .txt, .tsv or .json file")


def cmd_power(a: argparse.Namespace) -> None:
    """`lem plan power` (lem.plan_power): the arguments checked first, then the config's `evidence` section."""
    from lem.config_check import ConfigError, check_workflow_config

    check_arguments(a)
    raw: dict[str, Any] = {}
    if a.configfile:
        try:  # the workflow's own check, as `lem plan cost`: the same refusals, in one line
            config = check_workflow_config(read_configfiles(a.configfile), SCHEMA)
        except (PlanError, ConfigError) as err:
            raise PowerError(f"config: {err}") from None
        raw = config.get("evidence") or {}
    run_power(a, raw)


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


def cmd_cost(a: argparse.Namespace) -> int:
    from lem.config_check import ConfigError, check_workflow_config

    if bool(a.configfile) == bool(a.config_json):
        raise UsageError("give --configfile or --config-json (one of them)")
    if a.configfile:
        config = read_configfiles(a.configfile)
        title = f"Plan of {' + '.join(a.configfile)}"
    else:
        config = copy.deepcopy(a.config_json)
        title = "Plan of the run's config"
    if not Path(a.schema).is_file():
        raise PlanError(f"config schema {a.schema} not found (run from the repository, or pass --schema)")
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
    ),
)  # fmt: skip
