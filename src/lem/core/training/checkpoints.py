"""A training stage's checkpoints (`lem.pretrain.train_stage`): the `checkpoint-<step>` folders, the folder of
one run's checkpoints (a fingerprint of what the run starts from: a rerun of the same run resumes, another
run starts afresh), and the checkpoint a stage chose, checked against its schedule."""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from pathlib import Path
from typing import Any

from lem.core.training.schedule import Schedule

log = logging.getLogger("lem.pretrain")


def checkpoint_step(path: Path) -> int:
    return int(path.name.rsplit("-", 1)[-1])


def checkpoint_dirs(ckpt_dir: Path) -> list[Path]:
    """The `checkpoint-<step>` folders of `ckpt_dir`, by step."""
    found = [p for p in ckpt_dir.glob("checkpoint-*") if p.is_dir() and p.name.rsplit("-", 1)[-1].isdigit()]
    return sorted(found, key=checkpoint_step)


def dir_bytes(path: Path) -> int:
    """Bytes of the files under `path` (their sizes, as `du --apparent-size` counts them)."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


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


def checked_choice(state, schedule: Schedule, out_dir: Path) -> tuple[list[dict], Path, int]:
    """The evaluations of a finished stage and its chosen checkpoint (folder, step); fails unless the stage
    trained and evaluated exactly as scheduled and chose an evaluated checkpoint."""
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
    return evals, best_ckpt, best_step
