"""The settings of pre-training: how one training stage runs (`PretrainTrainingSettings`), the architecture of a model
from scratch (`ModelSettings`), and what each verb's `--settings` holds (`StageSettings` for `lem pretrain
continue`, `ScratchSettings` for `lem pretrain base`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lem.core.settings import Settings, SettingsError
from lem.core.training import COMPILE_MODES, LOSS_POSITIONS, TrainingSettings
from lem.masking.collate import MaskingSettings

STATIC_SHAPES = ("auto", "on", "off")


@dataclass(frozen=True)
class PretrainTrainingSettings(TrainingSettings):
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

    training: PretrainTrainingSettings = field(default_factory=PretrainTrainingSettings)
    masking: MaskingSettings = field(default_factory=MaskingSettings)


@dataclass(frozen=True)
class ScratchSettings(StageSettings):
    """`lem pretrain base --settings`: the architecture of the model from scratch, its training and its
    masking (standard MLM unless set)."""

    masking: MaskingSettings = field(default_factory=lambda: MaskingSettings(strategy="standard"))
    model: ModelSettings = field(default_factory=ModelSettings)


# training settings that change how fast a stage trains, not what it computes: a job resumed with
# another value keeps its checkpoints
RESULT_NEUTRAL = ("dataloader_num_workers",)


def result_settings(cfg: dict) -> dict:
    """`cfg` (a stage's settings) without its `RESULT_NEUTRAL` training keys, for the checkpoint fingerprint."""
    training = {k: v for k, v in (cfg.get("training") or {}).items() if k not in RESULT_NEUTRAL}
    return {**cfg, "training": training} if "training" in cfg else cfg
