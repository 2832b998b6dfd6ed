"""Pre-training: the tiny base model from scratch, and continual pre-training (stage mono, then para).

One function does a training stage: `train_stage`. It runs the Hugging Face Trainer with a masking
collator (standard MLM or LEM, from `lem.masking`), evaluates the masked-LM loss on a validation set that
was masked **once** with a fixed seed (so checkpoints are comparable), keeps the checkpoint with the
lowest validation loss and records the choice in `selection.json`. Checkpoints live outside the stage's
output folder (`--checkpoints`), so a job that is killed and started again resumes from its last
checkpoint (model, optimizer, scheduler, RNG and data position) instead of step 0.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import math
import os
import shutil
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lem.settings import settings_from_dict

log = logging.getLogger("lem.pretrain")


@dataclass
class TrainSettings:
    """How one training stage runs (HF Trainer arguments we expose)."""

    epochs: float = 1.0
    max_steps: int = -1
    batch_size: int = 32
    grad_accum: int = 1
    learning_rate: float = 5e-5
    weight_decay: float = 0.0
    warmup_ratio: float = 0.0
    scheduler: str = "linear"
    checkpoint_every: int | str = "epoch"  # "epoch" or a number of optimizer steps
    logging_steps: int = 50
    precision: str = "auto"  # auto | fp32 | fp16 | bf16
    seed: int = 13
    valid_examples: int | None = 2000  # cap on the validation set (None = all)
    keep_checkpoints: bool = False  # keep the checkpoint folder after a successful run
    stats_examples: int = 2000  # examples for masking_stats.json
    min_evaluations: int = 5  # evaluations per stage at least (the interval shrinks; the final step counts)

    def __post_init__(self) -> None:
        if not isinstance(self.min_evaluations, int) or self.min_evaluations < 1:
            raise ValueError(
                f"training settings: min_evaluations must be an integer >= 1, got {self.min_evaluations!r}"
            )

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> TrainSettings:
        return settings_from_dict(cls, d, "training settings")


@dataclass
class ModelSettings:
    """Architecture of a model trained from scratch (XLM-R architecture)."""

    hidden_size: int = 128
    num_hidden_layers: int = 2
    num_attention_heads: int = 2
    intermediate_size: int = 256
    max_length: int = 128

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> ModelSettings:
        return settings_from_dict(cls, d, "model settings")


@dataclass(frozen=True)
class Schedule:
    """When a training stage evaluates and what it keeps, derived from its real step count.

    `eval_every` is the configured interval (`checkpoint_every`: steps, or one epoch), shrunk so that the
    stage evaluates at least `min_evaluations` times; the final step is always evaluated (and saved), so a
    stage shorter than one interval still chooses between checkpoints. Only the best and the last
    checkpoints are kept (at most `KEPT_CHECKPOINTS`; one more exists briefly while a new one is written)."""

    steps: int  # optimizer steps of the stage
    steps_per_epoch: int
    eval_every: int
    evaluations: int  # evaluations, the final step included
    kept_checkpoints: int  # checkpoints on disk after a save (best and last)
    peak_checkpoints: int  # checkpoints on disk at most (while a new one is written)

    @property
    def eval_steps(self) -> list[int]:
        """The global steps evaluated (and saved): every `eval_every` steps, and the final step."""
        at = list(range(self.eval_every, self.steps + 1, self.eval_every))
        return at if at and at[-1] == self.steps else [*at, self.steps]


KEPT_CHECKPOINTS = 2


def steps_per_epoch(n_examples: int, batch_size: int, grad_accum: int = 1, world_size: int = 1) -> int:
    """Optimizer steps per epoch as the HF Trainer counts them (the last partial batch is a batch; the
    last partial accumulation is an optimizer step)."""
    batches = math.ceil(n_examples / (batch_size * world_size))
    return max(1, math.ceil(batches / grad_accum))


def training_schedule(
    n_examples: int,
    *,
    epochs: float,
    batch_size: int,
    grad_accum: int = 1,
    max_steps: int = -1,
    checkpoint_every: int | str = "epoch",
    min_evaluations: int = 5,
    world_size: int = 1,
) -> Schedule:
    """The evaluation cadence and checkpoint count of a stage of `n_examples` training examples."""
    if n_examples < 1:
        raise ValueError(f"a training stage needs at least one example, got {n_examples}")
    per_epoch = steps_per_epoch(n_examples, batch_size, grad_accum, world_size)
    steps = max_steps if max_steps > 0 else max(1, math.ceil(epochs * per_epoch))
    interval = per_epoch if checkpoint_every == "epoch" else int(checkpoint_every)
    if interval < 1:
        raise ValueError(f"checkpoint_every must be 'epoch' or a positive number of steps, got {interval}")
    interval = max(1, min(interval, steps // max(1, min_evaluations)))
    evaluations = steps // interval + (1 if steps % interval else 0)
    kept = min(KEPT_CHECKPOINTS, evaluations)
    return Schedule(
        steps=steps,
        steps_per_epoch=per_epoch,
        eval_every=interval,
        evaluations=evaluations,
        kept_checkpoints=kept,
        peak_checkpoints=min(kept + 1, evaluations),
    )


def stage_schedule(n_examples: int, settings: TrainSettings, world_size: int = 1) -> Schedule:
    """`training_schedule` of a stage with these training settings."""
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


def checkpoint_step(path: Path) -> int:
    return int(path.name.rsplit("-", 1)[-1])


def checkpoint_dirs(ckpt_dir: Path) -> list[Path]:
    """The `checkpoint-<step>` folders of `ckpt_dir`, by step."""
    found = [p for p in ckpt_dir.glob("checkpoint-*") if p.is_dir() and p.name.rsplit("-", 1)[-1].isdigit()]
    return sorted(found, key=checkpoint_step)


def dir_bytes(path: Path) -> int:
    """Bytes of the files under `path` (their sizes, as `du --apparent-size` counts them)."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def set_threads(threads: int | None) -> None:
    import torch

    if threads:
        torch.set_num_threads(threads)


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


class PipelineCollator:
    """Masks training batches with a per-batch seed; pads pre-masked validation rows as they are.

    The seed of batch b is derived from (seed, b), so the masks do not depend on how many batches a
    resumed run skipped: `batches_seen` is set from the restored global step (`ResumeBatchCounter`).
    """

    def __init__(self, collator, seed: int):
        self.collator = collator
        self.seed = seed
        self.batches_seen = 0

    def __call__(self, rows: list[dict]) -> dict:
        if "labels" in rows[0]:
            return self.collator(rows)  # pre-masked validation rows: padded, never re-masked
        seed = int(np.random.SeedSequence([self.seed, self.batches_seen]).generate_state(1)[0])
        self.batches_seen += 1
        return self.collator.with_seed(seed)(rows)


def fixed_masked_validation(valid, collator, seed: int, limit: int | None):
    """Mask the validation set once, with a fixed seed, so every checkpoint sees the same masks."""
    from datasets import Dataset

    from lem.masking import fixed_masked_examples

    if limit is not None and len(valid) > limit:
        valid = valid.shuffle(seed=seed).select(range(limit))
    return Dataset.from_list(fixed_masked_examples(collator, valid, batch_size=64, seed=seed))


def _precision_flags(precision: str) -> dict[str, bool]:
    import torch

    if precision == "auto":
        if not torch.cuda.is_available():
            return {}
        return {"bf16": True} if torch.cuda.is_bf16_supported() else {"fp16": True}
    return {"fp16": precision == "fp16", "bf16": precision == "bf16"}


def fingerprint(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def prepare_checkpoint_dir(ckpt_dir: Path, fp: str) -> bool:
    """Make `ckpt_dir` hold checkpoints of exactly this run; return True when one can be resumed."""
    marker = ckpt_dir / "fingerprint.json"
    if ckpt_dir.exists():
        old = json.loads(marker.read_text()).get("fingerprint") if marker.exists() else None
        if old != fp:
            log.info(
                "checkpoints in %s belong to other settings (%s != %s): starting afresh", ckpt_dir, old, fp
            )
            shutil.rmtree(ckpt_dir)
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    for p in checkpoint_dirs(ckpt_dir):
        # The Trainer writes trainer_state.json after the model, optimizer and RNG states: a checkpoint
        # without it was cut short by a kill and cannot be resumed from.
        if not (p / "trainer_state.json").exists():
            log.info("removing the incomplete checkpoint %s (no trainer_state.json)", p)
            shutil.rmtree(p)
    marker.write_text(json.dumps({"fingerprint": fp}) + "\n")
    return bool(checkpoint_dirs(ckpt_dir))


def train_stage(
    *,
    model,
    tokenizer,
    train_ds,
    valid_ds,
    masking,
    settings: TrainSettings,
    out_dir: Path,
    ckpt_dir: Path,
    fp: str,
    extra_selection: dict | None = None,
) -> dict:
    """Train one stage, choose the best checkpoint by fixed-mask validation loss, save it to `out_dir`.

    The stage evaluates and saves at the steps of `stage_schedule` (at least `min_evaluations` times, the
    final step included, whatever `checkpoint_every` and the data size), keeps the best and the last
    checkpoints only, and fails unless it evaluated exactly at the scheduled steps."""
    import torch
    from transformers import Trainer, TrainerCallback, TrainingArguments

    from lem.files import atomic_path, write_json
    from lem.masking import make_collator, masking_stats

    t0 = time.time()
    resume = prepare_checkpoint_dir(ckpt_dir, fp)
    base_collator = make_collator(tokenizer, masking, settings.seed)
    eval_ds = fixed_masked_validation(valid_ds, base_collator, settings.seed + 1, settings.valid_examples)
    train_ds = train_ds.remove_columns(
        [c for c in train_ds.column_names if c not in {"input_ids", "word_ids", "word_flags", "lang"}]
    )
    collator = PipelineCollator(base_collator, settings.seed)

    schedule = stage_schedule(len(train_ds), settings, int(os.environ.get("WORLD_SIZE", "1")))
    log.info(
        "schedule: %d steps (%d per epoch), evaluate and save every %d steps and at the last: %d evaluations",
        schedule.steps, schedule.steps_per_epoch, schedule.eval_every, schedule.evaluations,
    )  # fmt: skip

    started_at = {"step": 0}

    class ResumeBatchCounter(TrainerCallback):
        def on_train_begin(self, args, state, control, **kw):
            collator.batches_seen = state.global_step * args.gradient_accumulation_steps
            started_at["step"] = state.global_step

    class ScheduledEvaluation(TrainerCallback):
        """Checks the Trainer's step count against the schedule; evaluates and saves at the final step."""

        def on_train_begin(self, args, state, control, **kw):
            if state.max_steps != schedule.steps:
                raise RuntimeError(
                    f"the Trainer plans {state.max_steps} steps, the schedule {schedule.steps}: "
                    "lem.pretrain.training_schedule no longer counts steps as the Trainer does"
                )

        def on_step_end(self, args, state, control, **kw):
            if state.global_step >= state.max_steps:  # a no-op when the final step is an eval step
                control.should_evaluate = True
                control.should_save = True

    args = TrainingArguments(
        output_dir=str(ckpt_dir),
        num_train_epochs=settings.epochs,
        max_steps=settings.max_steps,
        per_device_train_batch_size=settings.batch_size,
        per_device_eval_batch_size=max(settings.batch_size, 32),
        gradient_accumulation_steps=settings.grad_accum,
        learning_rate=settings.learning_rate,
        weight_decay=settings.weight_decay,
        warmup_steps=settings.warmup_ratio,  # a float < 1 is a share of the steps
        lr_scheduler_type=settings.scheduler,
        eval_strategy="steps",
        save_strategy="steps",
        eval_steps=schedule.eval_every,
        save_steps=schedule.eval_every,
        # transformers' rotation never deletes the most recent nor the best checkpoint (5.23:
        # trainer_utils.rotate_checkpoints), so 2 keeps exactly the best and the last (the last two when
        # the last is the best); a limit of 1 would also delete the last at the end of training.
        save_total_limit=KEPT_CHECKPOINTS,
        load_best_model_at_end=True,
        metric_for_best_model="eval_loss",
        greater_is_better=False,
        logging_steps=settings.logging_steps,
        seed=settings.seed,
        data_seed=settings.seed,
        report_to="none",
        remove_unused_columns=False,
        dataloader_num_workers=0,
        disable_tqdm=True,
        save_only_model=False,
        **_precision_flags(settings.precision),
    )
    trainer = Trainer(
        model=model,
        args=args,
        train_dataset=train_ds,
        eval_dataset=eval_ds,
        data_collator=collator,
        processing_class=tokenizer,
        callbacks=[ResumeBatchCounter(), ScheduledEvaluation()],
    )
    result = trainer.train(resume_from_checkpoint=True if resume else None)
    state = trainer.state
    evals = [
        {"step": h["step"], "epoch": h.get("epoch"), "eval_loss": h["eval_loss"]}
        for h in state.log_history
        if "eval_loss" in h
    ]
    done = [e["step"] for e in evals]
    if state.global_step != schedule.steps or done != schedule.eval_steps:
        raise RuntimeError(
            f"{out_dir}: trained {state.global_step} steps and evaluated at steps {done}, but the schedule "
            f"is {schedule.steps} steps evaluated at {schedule.eval_steps}: no checkpoint choice is recorded"
        )
    if not state.best_model_checkpoint:
        raise RuntimeError(f"{out_dir}: {len(done)} evaluations but no best checkpoint was recorded")
    best_ckpt = Path(state.best_model_checkpoint)
    best_step = checkpoint_step(best_ckpt)
    if best_step not in done:
        raise RuntimeError(f"{out_dir}: the chosen checkpoint {best_ckpt.name} was never evaluated ({done})")
    final_eval = trainer.evaluate()  # the loaded best model on the same fixed masks
    reloaded = final_eval["eval_loss"]
    if not math.isclose(reloaded, state.best_metric, rel_tol=1e-3, abs_tol=1e-6):
        raise RuntimeError(
            f"{out_dir}: the reloaded model's validation loss {reloaded} is not the best checkpoint's "
            f"{state.best_metric} ({best_ckpt.name}): the saved model would not be the chosen one"
        )
    on_disk = checkpoint_dirs(ckpt_dir)
    ckpt_bytes = max((dir_bytes(p) for p in on_disk), default=0)
    if len(on_disk) > schedule.kept_checkpoints:
        log.warning("%d checkpoints on disk, more than the %d kept", len(on_disk), schedule.kept_checkpoints)
    selection = {
        "criterion": "masked-LM loss on the validation set, masked once with a fixed seed",
        "best_checkpoint": best_ckpt.name if best_ckpt else None,
        "best_step": best_step,
        "best_eval_loss": state.best_metric,
        "reloaded_eval_loss": final_eval["eval_loss"],
        "global_steps": state.global_step,
        "resumed": bool(resume),
        "schedule": {
            **asdict(schedule),
            "eval_steps": schedule.eval_steps,
            "checkpoint_every": settings.checkpoint_every,
            "min_evaluations": settings.min_evaluations,
        },
        "evaluations_done": len(done),
        "evaluations_match_schedule": True,  # checked above: the run fails otherwise
        "checkpoints": {
            "on_disk": [p.name for p in on_disk],
            "checkpoint_bytes": ckpt_bytes,  # the largest checkpoint folder, as measured
            "peak_bytes": schedule.peak_checkpoints * ckpt_bytes,  # kept + the one being written
            "kept_after_run": settings.keep_checkpoints,
        },
        "evaluations": evals,
        # the Trainer averages the loss over the steps of this call only: after a resume, those since it
        "train_loss": result.training_loss if state.global_step > started_at["step"] else None,
        "train_loss_steps": state.global_step - started_at["step"],
        "seconds": round(time.time() - t0, 1),
        **(extra_selection or {}),
    }
    # what this variant's collator actually masks (a fresh copy, seeded apart from training)
    stats = masking_stats(
        base_collator, train_ds, tokenizer, n_examples=settings.stats_examples, seed=settings.seed + 2
    )
    if not trainer.is_world_process_zero():  # under torchrun, rank 0 alone writes the outputs
        return selection
    with atomic_path(out_dir) as tmp:
        # the model as safetensors and the arguments as JSON (Trainer.save_model adds a pickled training_args.bin)
        trainer.model.save_pretrained(str(tmp), safe_serialization=True)
        tokenizer.save_pretrained(str(tmp))
        (tmp / "training_args.json").write_text(trainer.args.to_json_string(), encoding="utf-8")
        write_json(tmp / "selection.json", selection)
        write_json(tmp / "masking_stats.json", stats)
        with open(tmp / "train_log.jsonl", "w", encoding="utf-8") as fh:
            for h in state.log_history:
                fh.write(json.dumps(h) + "\n")
    if not settings.keep_checkpoints:
        shutil.rmtree(ckpt_dir, ignore_errors=True)
    log.info(
        "trained %s: %d steps, best %s (eval loss %.4f) in %.1fs",
        out_dir,
        state.global_step,
        selection["best_checkpoint"],
        state.best_metric or float("nan"),
        time.time() - t0,
    )
    del torch
    return selection


def new_model(tokenizer, arch: ModelSettings, seed: int):
    """A randomly initialised XLM-R-architecture masked LM sized for `tokenizer`."""
    import torch
    from transformers import XLMRobertaConfig, XLMRobertaForMaskedLM

    torch.manual_seed(seed)
    config = XLMRobertaConfig(
        vocab_size=len(tokenizer),
        hidden_size=arch.hidden_size,
        num_hidden_layers=arch.num_hidden_layers,
        num_attention_heads=arch.num_attention_heads,
        intermediate_size=arch.intermediate_size,
        max_position_embeddings=arch.max_length + 2,  # XLM-R positions start after the padding index
        type_vocab_size=1,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    return XLMRobertaForMaskedLM(config)


def load_model(path: str | Path):
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(path))
    model = AutoModelForMaskedLM.from_pretrained(str(path), trust_remote_code=False)
    return model, tokenizer


def run(args: argparse.Namespace) -> int:
    """`lem pretrain base` (a tiny model from scratch, standard MLM) or `lem pretrain continue` (a
    variant's stage from `--init`): the same training stage, different starting points."""
    from transformers import AutoTokenizer

    from lem.masking import MaskingSettings

    cfg = json.loads(args.settings)
    train = TrainSettings.from_dict(cfg.get("training"))
    if args.verb == "base":
        masking = MaskingSettings.from_dict(cfg.get("masking", {"strategy": "standard"}))
        tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
        model = new_model(tokenizer, ModelSettings.from_dict(cfg.get("model")), train.seed)
        init, stage = "random (from scratch)", "base"
    else:
        masking = MaskingSettings.from_dict(cfg.get("masking"))
        model, tokenizer = load_model(args.init)
        init, stage = str(args.init), args.stage
    train_ds, valid_ds = load_features(args.features)
    fp = fingerprint(
        {"cmd": args.verb, "cfg": cfg, "init": init, "features": [str(f) for f in args.features]}
    )
    train_stage(
        model=model,
        tokenizer=tokenizer,
        train_ds=train_ds,
        valid_ds=valid_ds,
        masking=masking,
        settings=train,
        out_dir=Path(args.out),
        ckpt_dir=Path(args.checkpoints),
        fp=fp,
        extra_selection={"init": init, "stage": stage},
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="lem pretrain", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="verb", required=True)
    b = sub.add_parser("base", help="pre-train a tiny XLM-R-architecture model from scratch (standard MLM)")
    b.add_argument("--tokenizer", required=True)
    b.add_argument("--features", nargs="+", required=True)
    b.add_argument("--settings", required=True, help="JSON: {model: {...}, training: {...}, masking: {...}}")
    b.add_argument(
        "--checkpoints", required=True, help="folder for resumable checkpoints (kept across restarts)"
    )
    b.add_argument("--out", required=True)
    b.add_argument("--threads", type=int, default=None)
    c = sub.add_parser("continue", help="continual pre-training stage (mono or para) of a variant")
    c.add_argument("--init", required=True, help="model folder to start from")
    c.add_argument("--stage", required=True, choices=["mono", "para"])
    c.add_argument("--features", nargs="+", required=True)
    c.add_argument("--settings", required=True, help="JSON: {training: {...}, masking: {...}}")
    c.add_argument("--checkpoints", required=True)
    c.add_argument("--out", required=True)
    c.add_argument("--threads", type=int, default=None)
    args = p.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s", stream=sys.stderr
    )
    set_threads(args.threads)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    return run(args)
