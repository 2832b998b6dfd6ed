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
of training batches and of the validation set is `lem.masking.collate`. By concern:

- `lem.pretrain.settings`: a stage's training (`PretrainTrainingSettings`), the architecture from scratch
  (`ModelSettings`), each verb's `--settings` (`StageSettings`, `ScratchSettings`);
- `lem.pretrain.stage`: `train_stage` and its steps, the schedule planning reads (`stage_schedule`);
- `lem.pretrain.model`: the model a stage starts from (`new_model`, `load_model`);
- `lem.pretrain.cli`: `lem pretrain base` and `lem pretrain continue`.
"""

# the checkpoints' fingerprint and folder are lem.core.training.checkpoints', importable from here as before
from lem.core.training.checkpoints import fingerprint, prepare_checkpoint_dir
from lem.pretrain.model import load_model, new_model
from lem.pretrain.settings import (
    RESULT_NEUTRAL,
    STATIC_SHAPES,
    ModelSettings,
    PretrainTrainingSettings,
    ScratchSettings,
    StageSettings,
    result_settings,
)
from lem.pretrain.stage import (
    StageOutcome,
    load_features,
    selection_record,
    stage_arguments,
    stage_batches,
    stage_schedule,
    static_length,
    train_stage,
    use_static_shapes,
    write_stage,
)

__all__ = [
    "RESULT_NEUTRAL", "STATIC_SHAPES", "ModelSettings", "ScratchSettings", "StageOutcome", "StageSettings",
    "PretrainTrainingSettings", "fingerprint", "load_features", "load_model", "new_model", "prepare_checkpoint_dir",
    "result_settings", "selection_record", "stage_arguments", "stage_batches", "stage_schedule", "static_length",
    "train_stage", "use_static_shapes", "write_stage",
]  # fmt: skip
