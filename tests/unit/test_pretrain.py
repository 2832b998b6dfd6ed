"""Continual pre-training: automatic checkpoint choice; the killed, interrupted and other-dispatch runs (whole
training processes): tests/dag/test_pretrain_processes.py."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from support.builders import pretraining_world
from support.training import checkpoints_on_disk, train_cmd

from lem.core.training import steps_per_epoch, training_schedule
from lem.core.training.checkpoints import fingerprint, prepare_checkpoint_dir
from lem.pretrain import PretrainTrainingSettings


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> dict[str, Path]:
    return pretraining_world(tmp_path_factory.mktemp("pretrain"))


def test_best_checkpoint_is_chosen_by_fixed_mask_validation_loss(tiny, tmp_path):
    subprocess.run(train_cmd(tiny, tmp_path), check=True, capture_output=True)
    sel = json.loads((tmp_path / "model" / "selection.json").read_text())
    losses = {e["step"]: e["eval_loss"] for e in sel["evaluations"]}
    # checkpoint_every 6 gives 4 evaluations in 24 steps: the interval shrinks to 24 // 5 = 4
    assert sorted(losses) == sel["schedule"]["eval_steps"] == [4, 8, 12, 16, 20, 24]
    assert sel["evaluations_done"] == sel["schedule"]["evaluations"] == 6
    assert sel["best_step"] == min(losses, key=losses.get)
    assert sel["reloaded_eval_loss"] == pytest.approx(losses[sel["best_step"]], rel=1e-5)
    on_disk = checkpoints_on_disk(tmp_path)
    assert sel["checkpoints"]["on_disk"] == on_disk and len(on_disk) == 2
    assert sel["best_checkpoint"] in on_disk and on_disk[-1] == "checkpoint-24"
    stats = json.loads((tmp_path / "model" / "masking_stats.json").read_text())
    assert (
        stats["per_lang"]["en"]["entity_share"]["enabled"]["masked"]
        > stats["per_lang"]["en"]["entity_share"]["enabled"]["text"]
    )
    assert (tmp_path / "model" / "model.safetensors").exists()
    assert not list((tmp_path / "model").glob("*.bin")), "no pickled files next to the model"


def test_para_set_smaller_than_one_checkpoint_interval_is_still_selected(tiny, tmp_path):
    """20 training pairs, batch 8: 3 steps per epoch, 27 steps in 9 epochs, against checkpoint_every 5000.
    The paper's si-en para stage (about 4,300 steps for a 5,000-step interval) in miniature."""
    # a constant, high learning rate overfits 20 pairs: the best checkpoint is not the last one
    cmd = train_cmd(tiny, tmp_path, stage="para", max_steps=-1, epochs=9, checkpoint_every=5000,
                    learning_rate=0.1, scheduler="constant")  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True)
    sel = json.loads((tmp_path / "model" / "selection.json").read_text())
    sched = sel["schedule"]
    assert (sched["steps"], sched["steps_per_epoch"], sched["eval_every"]) == (27, 3, 5)
    losses = {e["step"]: e["eval_loss"] for e in sel["evaluations"]}
    assert sorted(losses) == sched["eval_steps"] == [5, 10, 15, 20, 25, 27]  # the final step included
    assert sel["evaluations_done"] == sched["evaluations"] >= 5 and sel["global_steps"] == 27
    assert sel["best_step"] == min(losses, key=losses.get)
    assert sel["reloaded_eval_loss"] == pytest.approx(losses[sel["best_step"]], rel=1e-5)
    # at most the best and the last checkpoints remain, and the stated size is the measured one
    on_disk = checkpoints_on_disk(tmp_path)
    assert sel["best_step"] < 27, "the setting meant to overfit no longer does: the best is the last"
    assert on_disk == [sel["best_checkpoint"], "checkpoint-27"]
    size = sum(f.stat().st_size for f in (tmp_path / "ckpt" / on_disk[-1]).rglob("*") if f.is_file())
    assert sel["checkpoints"]["checkpoint_bytes"] >= size > 0
    assert sel["checkpoints"]["peak_bytes"] == 3 * sel["checkpoints"]["checkpoint_bytes"]


def test_checkpoints_of_other_settings_are_not_resumed(tmp_path):
    ckpt = tmp_path / "ckpt"
    assert prepare_checkpoint_dir(ckpt, fingerprint({"a": 1})) is False
    (ckpt / "checkpoint-5").mkdir()
    (ckpt / "checkpoint-5" / "trainer_state.json").write_text("{}")
    assert prepare_checkpoint_dir(ckpt, fingerprint({"a": 1})) is True
    assert prepare_checkpoint_dir(ckpt, fingerprint({"a": 2})) is False
    assert not (ckpt / "checkpoint-5").exists()


def test_incomplete_checkpoints_are_removed_not_resumed(tmp_path):
    ckpt = tmp_path / "ckpt"
    prepare_checkpoint_dir(ckpt, "fp")
    (ckpt / "checkpoint-5").mkdir()
    (ckpt / "checkpoint-5" / "trainer_state.json").write_text("{}")
    (ckpt / "checkpoint-10").mkdir()  # killed while being written: no trainer_state.json yet
    (ckpt / "checkpoint-10" / "model.safetensors").write_bytes(b"partial")
    assert prepare_checkpoint_dir(ckpt, "fp") is True
    assert sorted(p.name for p in ckpt.glob("checkpoint-*")) == ["checkpoint-5"]


def test_training_schedule_of_the_paper_si_en_para_stage():
    # about 3,070 pairs, batch 32, 45 epochs, checkpoints every 5,000 steps: never evaluated before
    s = training_schedule(3070, epochs=45, batch_size=32, checkpoint_every=5000)
    assert (s.steps_per_epoch, s.steps, s.eval_every, s.evaluations) == (96, 4320, 864, 5)
    assert s.eval_steps == [864, 1728, 2592, 3456, 4320]
    assert (s.kept_checkpoints, s.peak_checkpoints) == (2, 3)


@pytest.mark.parametrize(
    ("n", "kw", "expected"),
    [
        # a long stage keeps its configured interval, plus the final step
        (100_000, {"epochs": 10, "batch_size": 32, "checkpoint_every": 5000}, (3125, 31250, 5000, 7)),
        # one evaluation per epoch, shrunk to reach min_evaluations
        (1000, {"epochs": 2, "batch_size": 32}, (32, 64, 12, 6)),
        (1000, {"epochs": 10, "batch_size": 32}, (32, 320, 32, 10)),
        # gradient accumulation and data parallelism count optimizer steps
        (1000, {"epochs": 5, "batch_size": 8, "grad_accum": 4}, (32, 160, 32, 5)),
        (1000, {"epochs": 5, "batch_size": 8, "world_size": 4}, (32, 160, 32, 5)),
        (1001, {"epochs": 1, "batch_size": 10, "grad_accum": 3}, (34, 34, 6, 6)),
        # max_steps wins over epochs; fractional epochs round up
        (1000, {"epochs": 5, "batch_size": 8, "max_steps": 7, "checkpoint_every": 100}, (125, 7, 1, 7)),
        (1000, {"epochs": 0.5, "batch_size": 32, "min_evaluations": 1}, (32, 16, 16, 1)),
        # fewer steps than min_evaluations: every step is evaluated
        (10, {"epochs": 1, "batch_size": 4}, (3, 3, 1, 3)),
    ],
)
def test_training_schedule(n, kw, expected):
    s = training_schedule(n, **kw)
    assert (s.steps_per_epoch, s.steps, s.eval_every, s.evaluations) == expected
    assert len(s.eval_steps) == s.evaluations and s.eval_steps[-1] == s.steps
    assert s.evaluations >= min(kw.get("min_evaluations", 5), s.steps)
    assert s.kept_checkpoints == min(2, s.evaluations) and s.peak_checkpoints == min(3, s.evaluations)


@pytest.mark.parametrize(
    ("n", "batch", "accum"), [(1, 8, 1), (33, 8, 1), (64, 8, 3), (65, 8, 4), (101, 32, 2)]
)
def test_steps_per_epoch_counts_as_the_trainer_does(n, batch, accum, tmp_path):
    import torch
    from torch.utils.data import DataLoader
    from transformers import Trainer, TrainingArguments

    args = TrainingArguments(
        output_dir=str(tmp_path), per_device_train_batch_size=batch, gradient_accumulation_steps=accum,
        num_train_epochs=2.5, report_to="none", use_cpu=True,
    )  # fmt: skip
    trainer = Trainer(model=torch.nn.Linear(2, 2), args=args)
    loader = DataLoader(list(range(n)), batch_size=batch)
    max_steps = trainer.set_initial_training_values(args, loader)[-1]
    assert steps_per_epoch(n, batch, accum) == trainer.set_initial_training_values(args, loader)[1]
    assert training_schedule(n, epochs=2.5, batch_size=batch, grad_accum=accum).steps == max_steps


def test_training_settings_reject_bad_min_evaluations():
    with pytest.raises(ValueError, match="min_evaluations"):
        PretrainTrainingSettings.from_dict({"min_evaluations": 0})
    assert PretrainTrainingSettings.from_dict({}).min_evaluations == 5


def test_training_settings_reject_unknown_keys():
    with pytest.raises(ValueError, match="unknown key"):
        PretrainTrainingSettings.from_dict({"epochs": 1, "learnin_rate": 0.1})
