"""Pre-training: the tiny base model from scratch, and continual pre-training (stage mono, then para).

One function does a training stage: `train_stage`. It runs the Hugging Face Trainer with a masking
collator (standard MLM or LEM, from `lem.masking.collate`), evaluates the masked-LM loss on a validation set that
was masked **once** with a fixed seed (so checkpoints are comparable), keeps the checkpoint with the
lowest validation loss and records the choice in `selection.json`. Checkpoints live outside the stage's
output folder (`--checkpoints`), so a job that is killed and started again resumes from its last
checkpoint (model, optimizer, scheduler, RNG and data position) instead of step 0.

What every training stage shares (device, precision, seeds, the schedule and checkpoint policy, the
Trainer, the masked-LM loss on the labelled positions, data-parallel runs, saving) is `lem.core.training`,
a stage's checkpoint folders and the checked choice among them `lem.core.training.checkpoints`; the masking
of training batches and of the validation set is `lem.masking.collate`. `train_stage` reads as its steps:
the arguments (`stage_arguments`), the masking (`stage_batches`), the Trainer's run, the choice
(`checked_choice`), the record (`selection_record`) and the output folder (`write_stage`).
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from lem.core.files import content_digest
from lem.core.settings import Settings, SettingsError
from lem.core.stage import Stage, Verb, arg
from lem.core.training import (
    COMPILE_MODES,
    LOSS_POSITIONS,
    Schedule,
    TrainingSettings,
    set_threads,
    training_schedule,
)
from lem.core.training.checkpoints import (
    checked_choice,
    checkpoint_dirs,
    dir_bytes,
    fingerprint,
    prepare_checkpoint_dir,
)
from lem.masking.collate import (
    MaskingSettings,
    fixed_masked_validation,
)

log = logging.getLogger("lem.pretrain")

STATIC_SHAPES = ("auto", "on", "off")


@dataclass(frozen=True)
class TrainSettings(TrainingSettings):
    """How one training stage runs (HF Trainer arguments we expose); epochs, batch_size, learning_rate,
    weight_decay and precision are `lem.core.training.TrainingSettings`'."""

    max_steps: int = -1
    grad_accum: int = 1
    warmup_ratio: float = 0.0
    scheduler: str = "linear"
    checkpoint_every: int | str = "epoch"  # "epoch" or a number of optimizer steps
    logging_steps: int = 50
    seed: int = 13
    valid_examples: int | None = 2000  # cap on the validation set (None = all)
    keep_checkpoints: bool = False  # keep the checkpoint folder after a successful run
    stats_examples: int = 2000  # examples for masking_stats.json
    min_evaluations: int = 5  # evaluations per stage at least (the interval shrinks; the final step counts)
    # labelled: the LM head and the loss on the labelled positions only | all: HF's head on every position
    loss_positions: str = "labelled"
    dataloader_num_workers: int = 0  # worker processes masking batches ahead (0: in the training loop)
    group_by_length: bool = False  # batches of similar lengths (changes batch composition, so the result)
    # the training step off the launch-bound floor (lem.core.training, lem.masking.collate.static_batch):
    # auto = on with a CUDA device, off on the CPU (where the default's numbers stay as they were) | on | off
    static_shapes: str = "auto"
    # torch.compile: none | default | reduce-overhead (CUDA graphs; needs static shapes); the default is to be
    # chosen by the GPU measurement (bench/gpu_training.py, scripts/gpu-check.sh)
    compile: str = "none"

    @classmethod
    def prepare(cls, data: dict[str, Any]) -> dict[str, Any]:
        """`compile` as a boolean (older configs): false = none, true = default."""
        if isinstance(data.get("compile"), bool):
            data = {**data, "compile": "default" if data["compile"] else "none"}
        return data

    def validate(self) -> None:
        super().validate()
        problems = []
        if self.min_evaluations < 1:
            problems.append(f"min_evaluations must be an integer >= 1, got {self.min_evaluations!r}")
        if self.loss_positions not in LOSS_POSITIONS:
            problems.append(f"loss_positions {self.loss_positions!r} not in {LOSS_POSITIONS}")
        if self.max_steps < 1 and self.max_steps != -1:
            problems.append(
                f"max_steps must be -1 (train for `epochs`) or an integer >= 1, got {self.max_steps!r}"
            )
        if self.static_shapes not in STATIC_SHAPES:
            problems.append(f"static_shapes {self.static_shapes!r} not in {STATIC_SHAPES}")
        elif self.static_shapes == "on" and self.loss_positions != "labelled":
            problems.append("static_shapes: on needs loss_positions: labelled (the gathered positions' loss)")
        if self.compile not in COMPILE_MODES:
            problems.append(f"compile {self.compile!r} not in {COMPILE_MODES}")
        elif self.compile == "reduce-overhead" and self.static_shapes == "off":
            problems.append("compile: reduce-overhead (CUDA graphs) needs static_shapes: auto or on")
        if self.dataloader_num_workers < 0:
            problems.append(
                f"dataloader_num_workers must be an integer >= 0, got {self.dataloader_num_workers!r}"
            )
        if problems:
            raise SettingsError("training settings: " + "; ".join(problems))


@dataclass(frozen=True)
class ModelSettings(Settings):
    """Architecture of a model trained from scratch (XLM-R architecture)."""

    SECTION = "model settings"

    hidden_size: int = 128
    num_hidden_layers: int = 2
    num_attention_heads: int = 2
    intermediate_size: int = 256
    max_length: int = 128


@dataclass(frozen=True)
class StageSettings(Settings):
    """`lem pretrain continue --settings`: a stage's training and its variant's masking."""

    SECTION = "pretrain settings"

    training: TrainSettings = field(default_factory=TrainSettings)
    masking: MaskingSettings = field(default_factory=MaskingSettings)


@dataclass(frozen=True)
class BaseSettings(StageSettings):
    """`lem pretrain base --settings`: the architecture of the model from scratch, its training and its
    masking (standard MLM unless set)."""

    masking: MaskingSettings = field(default_factory=lambda: MaskingSettings(strategy="standard"))
    model: ModelSettings = field(default_factory=ModelSettings)


def stage_schedule(n_examples: int, settings: TrainSettings, world_size: int = 1) -> Schedule:
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


def use_static_shapes(settings: TrainSettings, device: str) -> bool:
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
    from lem.masking.collate import round_up

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


# training settings that change how fast a stage trains, not what it computes: a job resumed with
# another value keeps its checkpoints
RESULT_NEUTRAL = ("dataloader_num_workers",)


def result_settings(cfg: dict) -> dict:
    """`cfg` (a stage's settings) without its `RESULT_NEUTRAL` training keys, for the checkpoint fingerprint."""
    training = {k: v for k, v in (cfg.get("training") or {}).items() if k not in RESULT_NEUTRAL}
    return {**cfg, "training": training} if "training" in cfg else cfg


def stage_arguments(settings: TrainSettings, schedule: Schedule, ckpt_dir: Path, world: int, static: bool):
    """The TrainingArguments of a stage: evaluate and save on `schedule`, `settings.batch_size` shared between
    the `world` processes, the static path's flags when `static`; fails unless the Trainer runs `world`
    processes."""
    from lem.core import training

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


def stage_batches(*, model, tokenizer, train_ds, valid_ds, masking, settings: TrainSettings, static: bool):
    """The stage's masking: the base collator (`masking_stats` reads it), the validation set masked once with
    a fixed seed, the training collator (seeded per batch; on the static path, padded to fixed shapes) and
    the sampler drawing the training batches."""
    from lem.core import training
    from lem.masking.collate import BatchSeededCollator, StaticBatch, make_collator, masked_capacity

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


def selection_record(*, state, result, final_eval, evals, best_ckpt: Path, best_step: int, schedule: Schedule,
                     settings: TrainSettings, ckpt_dir: Path, resume: bool, started_step: int, processes: int,
                     seconds: float, extra: dict | None) -> dict:  # fmt: skip
    """`selection.json`: the checkpoint chosen, how (the schedule, the evaluations) and the checkpoints' sizes."""
    on_disk = checkpoint_dirs(ckpt_dir)
    ckpt_bytes = max((dir_bytes(p) for p in on_disk), default=0)
    if len(on_disk) > schedule.kept_checkpoints:
        log.warning("%d checkpoints on disk, more than the %d kept", len(on_disk), schedule.kept_checkpoints)
    return {
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
        "evaluations_done": len(evals),
        "evaluations_match_schedule": True,  # checked (checked_choice): the run fails otherwise
        "checkpoints": {
            "on_disk": [p.name for p in on_disk],
            "checkpoint_bytes": ckpt_bytes,  # the largest checkpoint folder, as measured
            "peak_bytes": schedule.peak_checkpoints * ckpt_bytes,  # kept + the one being written
            "kept_after_run": settings.keep_checkpoints,
        },
        "evaluations": evals,
        # the Trainer averages the loss over the steps of this call only: after a resume, those since it
        "train_loss": result.training_loss if state.global_step > started_step else None,
        "train_loss_steps": state.global_step - started_step,
        "processes": processes,
        "seconds": seconds,
        **(extra or {}),
    }


def write_stage(trainer, tokenizer, base_collator, train_ds, settings: TrainSettings, selection: dict,
                out_dir: Path) -> None:  # fmt: skip
    """The stage's output folder (atomically): the chosen model, `selection.json`, what the variant's collator
    actually masks (`masking_stats.json`: a fresh copy, seeded apart from training) and the training log."""
    from lem.core import training
    from lem.core.files import atomic_path, write_json
    from lem.masking.stats import masking_stats

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
    settings: TrainSettings,
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

    from lem.core import training

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
    selection = selection_record(
        state=state, result=result, final_eval=final_eval, evals=evals, best_ckpt=best_ckpt, best_step=best_step,
        schedule=schedule, settings=settings, ckpt_dir=ckpt_dir, resume=resume, started_step=started_at["step"],
        processes=args.world_size, seconds=round(time.time() - t0, 1), extra=extra_selection,
    )  # fmt: skip
    if not trainer.is_world_process_zero():  # under torchrun, rank 0 alone writes the outputs
        return selection
    write_stage(trainer, tokenizer, base_collator, train_ds, settings, selection, out_dir)
    if not settings.keep_checkpoints:
        shutil.rmtree(ckpt_dir, ignore_errors=True)
    log.info("trained %s: %d steps, best %s (eval loss %.4f) in %.1fs", out_dir, state.global_step,
             selection["best_checkpoint"], state.best_metric or float("nan"), time.time() - t0)  # fmt: skip
    return selection


def new_model(tokenizer, arch: ModelSettings, seed: int):
    """A randomly initialised XLM-R-architecture masked LM sized for `tokenizer` (SDPA attention)."""
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
        attn_implementation="sdpa",
    )
    return XLMRobertaForMaskedLM(config)


def load_model(path: str | Path):
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(path))
    model = AutoModelForMaskedLM.from_pretrained(
        str(path), trust_remote_code=False, attn_implementation="sdpa"
    )
    return model, tokenizer


def run(args: argparse.Namespace) -> int:
    """`lem pretrain base` (a tiny model from scratch, standard MLM) or `lem pretrain continue` (a
    variant's stage from `--init`): the same training stage, different starting points."""
    from transformers import AutoTokenizer

    cfg: StageSettings = args.settings
    train, masking = cfg.training, cfg.masking
    if args.verb == "base":
        tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
        model = new_model(tokenizer, cfg.model, train.seed)  # type: ignore[attr-defined]
        init, stage = "random (from scratch)", "base"
    else:
        model, tokenizer = load_model(args.init)
        init, stage = str(args.init), args.stage
    train_ds, valid_ds = load_features(args.features)
    # Checkpoints belong to what the run starts from, not to path names: a base model retrained under
    # other settings, or features rebuilt from other text, sit at the same paths with other content.
    start = [args.tokenizer] if args.verb == "base" else [args.init]
    fp = fingerprint(
        {
            "cmd": args.verb,
            "cfg": result_settings(cfg.to_dict()),
            "init": init,
            "start_content": content_digest(start),
            "features_content": content_digest(args.features),
        }
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


NPROC_HELP = (
    "data-parallel processes (torchrun, one node): a number, or `gpus` for one per visible GPU "
    "(default: $LEM_NPROC_PER_NODE, else 1); the training settings' batch_size is shared between them"
)


def cmd_train(args: argparse.Namespace, argv: list[str]) -> int:
    """Relaunch under torchrun when asked for several processes; then train (`run`) in this process."""
    from lem.core.training import nproc_per_node, relaunch

    status = relaunch(["pretrain", *argv], nproc_per_node(args.nproc_per_node))
    if status is not None:
        return status
    world = int(os.environ.get("WORLD_SIZE", "1"))
    set_threads(max(1, args.threads // world) if args.threads else None)  # --threads: the job's, shared
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    return run(args)


COMMON = (
    arg("--features", nargs="+", required=True),
    arg("--checkpoints", required=True, help="folder for resumable checkpoints (kept across restarts)"),
    arg("--out", required=True),
    arg("--threads", type=int, default=None, help="torch threads (of the job, shared by its processes)"),
    arg("--nproc-per-node", default=os.environ.get("LEM_NPROC_PER_NODE", "1"), help=NPROC_HELP),
)
STAGE = Stage(
    "pretrain",
    __doc__.splitlines()[0],
    (
        Verb("base", "pre-train a tiny XLM-R-architecture model from scratch (standard MLM)", cmd_train, (
            arg("--tokenizer", required=True),
            *COMMON,
        ), settings=BaseSettings, settings_required=True, argv_run=True),
        Verb("continue", "continual pre-training stage (mono or para) of a variant", cmd_train, (
            arg("--init", required=True, help="model folder to start from"),
            arg("--stage", required=True, choices=["mono", "para"]),
            *COMMON,
        ), settings=StageSettings, settings_required=True, argv_run=True),
    ),
)  # fmt: skip
