"""The training jobs' rows (`plan_job`: steps, evaluations, checkpoints, disk and GPU-hours of one job) and the whole
plan (`make_plan`), with totals and notes."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lem.plan.config import CKPT_STATE_BYTES, EVAL_COST
from lem.plan.counts import Counter, Split
from lem.plan.model import ModelSize, model_size
from lem.plan.other import OtherJobs
from lem.pretrain import PretrainTrainingSettings, stage_schedule
from lem.run import Run
from lem.run.settings import base_training, stage_training


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
    t = PretrainTrainingSettings.from_dict(training)  # what the training job itself parses
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
    for job in run.grid.training_jobs():  # the jobs of rules pretrain_base, pretrain_mono and pretrain_para
        if job.stage == "base":
            parts, training = [counter.mono(lang) for lang in run.langs], base_training(run, job.seed)
        else:
            if job.stage == "mono":
                parts = [counter.mono(lang) for lang in run.scope_langs(job.scope)]
            else:
                parts = [counter.para(pair) for pair in run.scope_pairs(job.scope)]
            training = stage_training(run, job.stage, job.scope, job.seed)
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
