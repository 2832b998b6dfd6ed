"""`torchrun` of two processes trains as one (the `dag` tier: a whole training process each way). The rest of
lem.core.training: tests/unit/test_training.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.builders import training_world
from support.training import stage_settings, weights


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> dict[str, Path]:
    return training_world(tmp_path_factory.mktemp("training"))


def test_torchrun_two_processes_train_as_one(tiny, tmp_path):
    """`torchrun --nproc_per_node 2` on the CPU (gloo): the same steps, evaluations and choice as one process,
    and, the model having no dropout, the same weights within float tolerance: both processes draw the same
    global batch of 32 and mask it whole, each trains on 16 of its rows, and the loss is divided by the
    labelled positions of the whole batch, so the averaged gradient is the one-process gradient. The two
    processes take the static step (`static_shapes: on`), the one process the eager step."""
    settings = dict(max_steps=12, checkpoint_every=4, min_evaluations=3, logging_steps=2)

    def cmd(run: Path, **more) -> list[str]:
        cfg = json.dumps(stage_settings(**settings, **more))
        return ["-m", "lem.cli", "pretrain", "continue", "--stage", "mono", "--init", str(tiny["init"]),
                "--features", str(tiny["features"]), "--settings", cfg, "--checkpoints", str(run / "ckpt"),
                "--threads", "1", "--out", str(run / "model")]  # fmt: skip

    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1"}
    one, two = tmp_path / "one", tmp_path / "two"
    subprocess.run([sys.executable, *cmd(one)], check=True, capture_output=True, env=env)
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    # the two processes take the static step (the GPU's default path: the global batch padded and gathered
    # before each process keeps its rows), the one process the eager step: the same numbers
    proc = subprocess.run([*launcher, *cmd(two, static_shapes="on")], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ref = json.loads((one / "model" / "selection.json").read_text())
    sel = json.loads((two / "model" / "selection.json").read_text())
    assert (sel["processes"], ref["processes"]) == (2, 1)
    for key in ("global_steps", "best_step", "best_checkpoint", "schedule", "evaluations_done"):
        assert sel[key] == ref[key], key
    assert [e["step"] for e in sel["evaluations"]] == [4, 8, 12]
    assert [e["eval_loss"] for e in sel["evaluations"]] == pytest.approx(
        [e["eval_loss"] for e in ref["evaluations"]], rel=1e-5
    )
    assert sel["train_loss"] == pytest.approx(ref["train_loss"], rel=1e-5)
    a, b = weights(one), weights(two)
    assert a.keys() == b.keys() and all(abs(a[k] - b[k]).max() < 1e-5 for k in a)
    # rank 0 alone wrote the outputs: the same files as one process's
    assert sorted(p.name for p in (two / "model").iterdir()) == sorted(
        p.name for p in (one / "model").iterdir()
    )
