"""When a training stage evaluates, what it saves and keeps, and which model it ends with: the `Schedule`
derived from the stage's real step count (`training_schedule`) and the `CheckpointPolicy` (`lem.core.training`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

# Imported inside functions: transformers (planning imports this package, with the training stages' settings,
# and needs no transformers)

KEPT_CHECKPOINTS = 2


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


def steps_per_epoch(n_examples: int, batch_size: int, grad_accum: int = 1, world_size: int = 1) -> int:
    """Optimizer steps per epoch as the HF Trainer counts them (the last partial batch is a batch; the
    last partial accumulation is an optimizer step). `batch_size` is per process, `world_size` processes."""
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


@dataclass(frozen=True)
class CheckpointPolicy:
    """When a run evaluates and saves, what it keeps, and which model it ends with.

    `scheduled(schedule)` (pre-training): evaluate and save at `schedule.eval_steps`, full checkpoints
    (model, optimizer, scheduler, RNG and data position: resumable), the best and the last kept, the best by
    validation loss loaded at the end. `best_epoch(metric)` (sentiment, NER): evaluate and save the model
    after every epoch, keep the best and the last, end with the best by `metric`. `final()`: no evaluation,
    the last model."""

    strategy: str  # "steps" | "epoch" | "no"
    every: int | None = None  # steps between evaluations ("steps")
    metric: str | None = None  # the Trainer's metric ("eval_loss", "macro_f1", "f1")
    greater_is_better: bool = False
    keep: int = KEPT_CHECKPOINTS
    resumable: bool = True  # full checkpoints (optimizer, scheduler, RNG) rather than the model alone

    @classmethod
    def scheduled(cls, schedule: Schedule) -> CheckpointPolicy:
        return cls("steps", every=schedule.eval_every, metric="eval_loss", greater_is_better=False)

    @classmethod
    def best_epoch(cls, metric: str, greater_is_better: bool = True) -> CheckpointPolicy:
        return cls("epoch", metric=metric, greater_is_better=greater_is_better, resumable=False)

    @classmethod
    def final(cls) -> CheckpointPolicy:
        return cls("no")

    def arguments(self) -> dict[str, Any]:
        """The TrainingArguments of this policy."""
        if self.strategy == "no":
            return {"eval_strategy": "no", "save_strategy": "no"}
        args: dict[str, Any] = {
            "eval_strategy": self.strategy,
            "save_strategy": self.strategy,
            # transformers' rotation never deletes the most recent nor the best checkpoint (5.23:
            # trainer_utils.rotate_checkpoints), so 2 keeps exactly the best and the last (the last two when
            # the last is the best); a limit of 1 would also delete the last at the end of training.
            "save_total_limit": self.keep,
            "load_best_model_at_end": True,
            "metric_for_best_model": self.metric,
            "greater_is_better": self.greater_is_better,
            "save_only_model": not self.resumable,
        }
        if self.strategy == "steps":
            args.update(eval_steps=self.every, save_steps=self.every)
        return args


def scheduled_evaluation_callback(schedule: Schedule):
    """A TrainerCallback that checks the Trainer's step count against `schedule` and evaluates and saves at
    the final step (a no-op when the final step is an evaluation step anyway)."""
    from transformers import TrainerCallback

    class ScheduledEvaluation(TrainerCallback):
        def on_train_begin(self, args, state, control, **kw):
            if state.max_steps != schedule.steps:
                raise RuntimeError(
                    f"the Trainer plans {state.max_steps} steps, the schedule {schedule.steps}: "
                    "lem.core.training.training_schedule no longer counts steps as the Trainer does"
                )

        def on_step_end(self, args, state, control, **kw):
            if state.global_step >= state.max_steps:
                control.should_evaluate = True
                control.should_save = True

    return ScheduledEvaluation()
