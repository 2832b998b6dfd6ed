"""The training tests' shared helpers, for the tests of the fast tiers and the whole training processes of the
`dag` tier alike: `lem pretrain continue`'s command line on a pre-training world (tests/unit/test_pretrain.py,
tests/dag/test_pretrain_processes.py; the world: support.builders.pretraining_world), a stage's settings and a
run's weights (tests/unit/test_training.py, tests/dag/test_training_torchrun.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from safetensors.numpy import load_file


def train_cmd(tiny: dict[str, Path], run: Path, stage: str = "mono", **training) -> list[str]:
    settings = {
        "training": {"max_steps": 24, "batch_size": 8, "learning_rate": 0.001, "checkpoint_every": 6,
                     "logging_steps": 6, "seed": 5, "keep_checkpoints": True, "stats_examples": 50,
                     **training},
        "masking": {"strategy": "lem", "entity_types": ["ne", "noun"]},
    }  # fmt: skip
    features = tiny["features"] if stage == "mono" else tiny["para"]
    return [sys.executable, "-m", "lem.cli", "pretrain", "continue", "--stage", stage,
            "--init", str(tiny["init"]), "--features", str(features),
            "--settings", json.dumps(settings), "--checkpoints", str(run / "ckpt"),
            "--threads", "1", "--out", str(run / "model")]  # fmt: skip


def checkpoints_on_disk(run: Path) -> list[str]:
    return sorted((p.name for p in (run / "ckpt").glob("checkpoint-*")), key=lambda n: int(n.split("-")[1]))


def stage_settings(**training_overrides) -> dict:
    return {
        "training": {"epochs": 3, "batch_size": 32, "learning_rate": 0.002, "checkpoint_every": "epoch",
                     "logging_steps": 4, "seed": 5, "keep_checkpoints": True, "stats_examples": 20,
                     "valid_examples": 32, **training_overrides},
        "masking": {"strategy": "lem", "entity_types": ["ne", "noun"]},
    }  # fmt: skip


def weights(run: Path) -> dict:
    return load_file(str(run / "model" / "model.safetensors"))
