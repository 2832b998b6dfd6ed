"""One training stage (`train_stage`), read as its steps: the arguments (`stage_arguments`), the masking
(`stage_batches`), the Trainer's run, the checked choice of a checkpoint (`checked_choice`), the record
(`selection_record`) and the output folder (`write_stage`).

The stage runs the Hugging Face Trainer with a masking collator (standard MLM or LEM, from
`lem.masking.collate`), evaluates the masked-LM loss on a validation set that was masked **once** with a fixed
seed (so checkpoints are comparable), keeps the checkpoint with the lowest validation loss and records the
choice in `selection.json`. What every training stage shares is `lem.core.training`; a stage's checkpoint
folders and the checked choice among them, `lem.core.training.checkpoints`.
"""

from __future__ import annotations

import logging
import math
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lem.core import training
from lem.core.files import atomic_path, write_json
from lem.core.training import Schedule, training_schedule
from lem.core.training.checkpoints import checked_choice, checkpoint_dirs, dir_bytes, prepare_checkpoint_dir
from lem.masking.collate import (
    BatchSeededCollator,
    StaticBatch,
    fixed_masked_validation,
    make_collator,
    masked_capacity,
    round_up,
)
from lem.masking.stats import masking_stats
from lem.pretrain.settings import PretrainTrainingSettings

# Imported inside functions: transformers and datasets (planning, `lem plan cost` and the config check alike,
# imports lem.pretrain for `stage_schedule` and the settings and needs neither)

log = logging.getLogger("lem.pretrain")


def stage_schedule(n_examples: int, settings: PretrainTrainingSettings, world_size: int = 1) -> Schedule:
    """`training_schedule` of a stage with these training settings. `settings.batch_size` is the global
    batch of the stage (a data-parallel run shares it between its processes), so its schedule is the
    one-process schedule (`world_size` 1); `world_size` > 1 counts `batch_size` per process instead."""
    return training_schedule(
        n_examples,
        epochs=settings.epochs,
        batch_size=settings.batch_size,
        grad_accum=settings.grad_accum,
        max_steps=settings.max_steps,
        checkpoint_every=settings.checkpoint_every,
        min_evaluations=settings.min_evaluations,
        world_size=world_size,
    )


def use_static_shapes(settings: PretrainTrainingSettings, device: str) -> bool:
    """Whether a stage takes the static path: `static_shapes: on`, or `auto` on a CUDA device (with the
    labelled-positions loss, which the static path computes in its gathered form)."""
    if settings.static_shapes == "auto":
        return device.startswith("cuda") and settings.loss_positions == "labelled"
    return settings.static_shapes == "on"


def static_length(longest: int, model) -> int:
    """The static path's tokens per row: the stage's longest example (features stop at pretrain.max_length)
    rounded up to a multiple of 8, but no longer than the model's position table (`max_position_embeddings`:
    padding positions take the padding index, but a longer row than the table is outside what the model was
    built for)."""
    limit = getattr(getattr(model, "config", None), "max_position_embeddings", None)
    length = round_up(longest)
    return max(int(longest), min(length, int(limit))) if limit else length


def load_features(dirs: list[str | Path]):
    """Concatenate the train and valid splits of several features folders."""
    from datasets import concatenate_datasets, load_from_disk

    parts = [load_from_disk(str(d)) for d in dirs]
    for d, p in zip(dirs, parts, strict=True):
        if "train" not in p or "valid" not in p:
            raise ValueError(f"{d}: expected a DatasetDict with 'train' and 'valid' splits, found {list(p)}")
    train = concatenate_datasets([p["train"] for p in parts])
    valid = concatenate_datasets([p["valid"] for p in parts])
    return train, valid


def stage_arguments(
    settings: PretrainTrainingSettings, schedule: Schedule, ckpt_dir: Path, world: int, static: bool
):
    """The TrainingArguments of a stage: evaluate and save on `schedule`, `settings.batch_size` shared between
    the `world` processes, the static path's flags when `static`; fails unless the Trainer runs `world`
    processes."""
    args = training.training_arguments(
        ckpt_dir,
        policy=training.CheckpointPolicy.scheduled(schedule),
        seed=settings.seed,
        data_seed=settings.seed,
        epochs=settings.epochs,
        max_steps=settings.max_steps,
        batch_size=math.ceil(settings.batch_size / world),
        eval_batch_size=math.ceil(max(settings.batch_size, 32) / world),
        grad_accum=settings.grad_accum,
        learning_rate=settings.learning_rate,
        weight_decay=settings.weight_decay,
        warmup=settings.warmup_ratio,  # a float < 1 is a share of the steps
        scheduler=settings.scheduler,
        logging_steps=settings.logging_steps,
        precision=settings.precision,
        remove_unused_columns=False,
        dataloader_num_workers=settings.dataloader_num_workers,
        compile=settings.compile,
        # the labelled-positions loss is normalised over the global batch; the full head's is a mean per process
        average_tokens_across_devices=settings.loss_positions == "labelled",
        no_step_sync=static,
    )
    if args.world_size != world:
        raise RuntimeError(
            f"{world} processes were started (WORLD_SIZE) but the Trainer runs {args.world_size}: "
            "they would each train alone and write the same outputs"
        )
    return args


def stage_batches(
    *, model, tokenizer, train_ds, valid_ds, masking, settings: PretrainTrainingSettings, static: bool
):
    """The stage's masking: the base collator (`masking_stats` reads it), the validation set masked once with
    a fixed seed, the training collator (seeded per batch; on the static path, padded to fixed shapes) and
    the sampler drawing the training batches."""
    base_collator = make_collator(tokenizer, masking, settings.seed)
    eval_ds = fixed_masked_validation(valid_ds, base_collator, settings.seed + 1, settings.valid_examples)
    data_collator = BatchSeededCollator(base_collator, settings.seed)
    if static:
        # the labelled positions in a per-row buffer of the masking budget's maximum
        longest = max(max(training.row_lengths(train_ds)), max(training.row_lengths(eval_ds)))
        length = static_length(longest, model)
        capacity = masked_capacity(masking, length)
        data_collator = StaticBatch(
            data_collator, length, capacity, tokenizer.pad_token_id, settings.batch_size
        )
        log.info("static shapes: %d tokens per row, %d labelled positions per row at most; compile: %s",
                 length, capacity, settings.compile)  # fmt: skip
    batches = training.BatchIndexSampler(
        len(train_ds),
        settings.batch_size,
        settings.seed,
        lengths=training.row_lengths(train_ds) if settings.group_by_length else None,
        group_size=settings.batch_size * settings.grad_accum,
    )
    return base_collator, eval_ds, data_collator, batches


@dataclass(frozen=True)
class StageOutcome:
    """What a stage's Trainer run ended with: what `selection.json` records."""

    state: Any  # the Trainer's state (transformers.TrainerState)
    result: Any  # the Trainer's TrainOutput (the training loss of this call)
    evals: list[dict]  # the evaluations, checked against the schedule (`checked_choice`)
    best_ckpt: Path
    best_step: int
    final_eval: dict  # the chosen model, reloaded, on the same fixed masks
    resumed: bool
    started_step: int  # the step this call started at (after a resume, the checkpoint's)
    processes: int
    seconds: float


def selection_record(outcome: StageOutcome, *, schedule: Schedule, settings: PretrainTrainingSettings, ckpt_dir: Path,
                     extra: dict | None = None) -> dict:  # fmt: skip
    """`selection.json`: the checkpoint chosen, how (the schedule, the evaluations) and the checkpoints' sizes."""
    on_disk = checkpoint_dirs(ckpt_dir)
    ckpt_bytes = max((dir_bytes(p) for p in on_disk), default=0)
    if len(on_disk) > schedule.kept_checkpoints:
        log.warning("%d checkpoints on disk, more than the %d kept", len(on_disk), schedule.kept_checkpoints)
    state = outcome.state
    return {
        "criterion": "masked-LM loss on the validation set, masked once with a fixed seed",
        "best_checkpoint": outcome.best_ckpt.name if outcome.best_ckpt else None,
        "best_step": outcome.best_step,
        "best_eval_loss": state.best_metric,
        "reloaded_eval_loss": outcome.final_eval["eval_loss"],
        "global_steps": state.global_step,
        "resumed": bool(outcome.resumed),
        "schedule": {
            **asdict(schedule),
            "eval_steps": schedule.eval_steps,
            "checkpoint_every": settings.checkpoint_every,
            "min_evaluations": settings.min_evaluations,
        },
        "evaluations_done": len(outcome.evals),
        "evaluations_match_schedule": True,  # checked (checked_choice): the run fails otherwise
        "checkpoints": {
            "on_disk": [p.name for p in on_disk],
            "checkpoint_bytes": ckpt_bytes,  # the largest checkpoint folder, as measured
            "peak_bytes": schedule.peak_checkpoints * ckpt_bytes,  # kept + the one being written
            "kept_after_run": settings.keep_checkpoints,
        },
        "evaluations": outcome.evals,
        # the Trainer averages the loss over the steps of this call only: after a resume, those since it
        "train_loss": outcome.result.training_loss if state.global_step > outcome.started_step else None,
        "train_loss_steps": state.global_step - outcome.started_step,
        "processes": outcome.processes,
        "seconds": outcome.seconds,
        **(extra or {}),
    }


def write_stage(trainer, tokenizer, base_collator, train_ds, settings: PretrainTrainingSettings, selection: dict,
                out_dir: Path) -> None:  # fmt: skip
    """The stage's output folder (atomically): the chosen model, `selection.json`, what the variant's collator
    actually masks (`masking_stats.json`: a fresh copy, seeded apart from training) and the training log."""
    stats = masking_stats(
        base_collator, train_ds, tokenizer, n_examples=settings.stats_examples, seed=settings.seed + 2
    )
    with atomic_path(out_dir) as tmp:
        training.save_model_dir(tmp, trainer.model, tokenizer, trainer.args)
        write_json(tmp / "selection.json", selection)
        write_json(tmp / "masking_stats.json", stats)
        training.write_json_lines(tmp / "train_log.jsonl", trainer.state.log_history)


def train_stage(
    *,
    model,
    tokenizer,
    train_ds,
    valid_ds,
    masking,
    settings: PretrainTrainingSettings,
    out_dir: Path,
    ckpt_dir: Path,
    fp: str,
    extra_selection: dict | None = None,
    callbacks: list | None = None,
) -> dict:
    """Train one stage, choose the best checkpoint by fixed-mask validation loss, save it to `out_dir`.

    The stage evaluates and saves at the steps of `stage_schedule` (at least `min_evaluations` times, the
    final step included, whatever `checkpoint_every` and the data size), keeps the best and the last
    checkpoints only, and fails unless it evaluated exactly at the scheduled steps. Under torchrun
    (`lem.core.training`), `settings.batch_size` is shared between the processes and rank 0 alone writes."""
    from transformers import TrainerCallback

    t0 = time.time()
    world = training.world_size()
    train_ds = train_ds.remove_columns(
        [c for c in train_ds.column_names if c not in {"input_ids", "word_ids", "word_flags", "lang"}]
    )
    schedule = stage_schedule(len(train_ds), settings)  # batch_size is the global batch, whatever `world`
    static = use_static_shapes(settings, training.pick_device("auto"))
    if static and not training.supports_labelled_positions(model):
        log.warning("static_shapes: %s has no encoder + lm_head: the eager path", type(model).__name__)
        static = False
    args = stage_arguments(settings, schedule, ckpt_dir, world, static)
    with args.main_process_first(local=False, desc="checkpoint folder"):
        if args.process_index == 0:
            prepare_checkpoint_dir(ckpt_dir, fp)
    resume = bool(checkpoint_dirs(ckpt_dir))
    base_collator, eval_ds, data_collator, batches = stage_batches(
        model=model, tokenizer=tokenizer, train_ds=train_ds, valid_ds=valid_ds, masking=masking,
        settings=settings, static=static,
    )  # fmt: skip
    log.info(
        "schedule: %d steps (%d per epoch), evaluate and save every %d steps and at the last: %d evaluations"
        " (%d process(es), %d examples per step each)",
        schedule.steps, schedule.steps_per_epoch, schedule.eval_every, schedule.evaluations, world,
        args.per_device_train_batch_size,
    )  # fmt: skip

    started_at = {"step": 0}

    class ResumedAt(TrainerCallback):
        def on_train_begin(self, args, state, control, **kw):
            started_at["step"] = state.global_step

    trainer = training.make_trainer(
        model=model,
        args=args,
        train_dataset=train_ds,
        eval_dataset=eval_ds,
        data_collator=data_collator,
        tokenizer=tokenizer,
        callbacks=[ResumedAt(), training.scheduled_evaluation_callback(schedule), *(callbacks or [])],
        train_batches=batches,
        loss_positions=settings.loss_positions,
        static_positions=static,
    )
    try:
        result = trainer.train(resume_from_checkpoint=True if resume else None)
        state = trainer.state
        evals, best_ckpt, best_step = checked_choice(state, schedule, out_dir)
        final_eval = trainer.evaluate()  # the loaded best model on the same fixed masks
    finally:
        training.restore_forward(model)
    reloaded = final_eval["eval_loss"]
    if not math.isclose(reloaded, state.best_metric, rel_tol=1e-3, abs_tol=1e-6):
        raise RuntimeError(
            f"{out_dir}: the reloaded model's validation loss {reloaded} is not the best checkpoint's "
            f"{state.best_metric} ({best_ckpt.name}): the saved model would not be the chosen one"
        )
    outcome = StageOutcome(
        state=state, result=result, evals=evals, best_ckpt=best_ckpt, best_step=best_step, final_eval=final_eval,
        resumed=resume, started_step=started_at["step"], processes=args.world_size,
        seconds=round(time.time() - t0, 1),
    )  # fmt: skip
    selection = selection_record(
        outcome, schedule=schedule, settings=settings, ckpt_dir=ckpt_dir, extra=extra_selection
    )
    if not trainer.is_world_process_zero():  # under torchrun, rank 0 alone writes the outputs
        return selection
    write_stage(trainer, tokenizer, base_collator, train_ds, settings, selection, out_dir)
    if not settings.keep_checkpoints:
        shutil.rmtree(ckpt_dir, ignore_errors=True)
    log.info("trained %s: %d steps, best %s (eval loss %.4f) in %.1fs", out_dir, state.global_step,
             selection["best_checkpoint"], state.best_metric or float("nan"), time.time() - t0)  # fmt: skip
    return selection
