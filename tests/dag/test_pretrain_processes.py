"""Continual pre-training as whole training processes (the `dag` tier: each trains a few times over): a run
killed after a checkpoint, or interrupted by SIGINT, resumes to the uninterrupted result; checkpoints of a
changed upstream model are not resumed; the weights do not depend on the caller's kernel dispatch. The rest of
pre-training: tests/unit/test_pretrain.py."""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from safetensors.numpy import load_file
from support.builders import pretraining_world
from support.training import checkpoints_on_disk, train_cmd

from lem.core.numerics import cpu_flags, is_x86
from lem.pretrain import ModelSettings, new_model


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> dict[str, Path]:
    return pretraining_world(tmp_path_factory.mktemp("pretrain"))


@pytest.fixture(scope="module")
def straight(tiny, tmp_path_factory) -> Path:
    """The uninterrupted run of the default settings (its checkpoints kept), which the tests below compare with or
    start from."""
    run = tmp_path_factory.mktemp("straight")
    subprocess.run(train_cmd(tiny, run), check=True, capture_output=True)
    return run


def test_killed_run_resumes_to_the_uninterrupted_result(tiny, straight, tmp_path):
    killed = tmp_path / "killed"

    proc = subprocess.Popen(train_cmd(tiny, killed), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # fmt: skip
    deadline = time.time() + 300
    # kill after a complete mid-run checkpoint (older ones are rotated away, so any of steps 8 to 20)
    middle = [killed / "ckpt" / f"checkpoint-{s}" / "trainer_state.json" for s in (8, 12, 16, 20)]
    while not any(f.exists() for f in middle):
        assert proc.poll() is None, "the run ended before it could be killed"
        assert time.time() < deadline, "no mid-run checkpoint within 300 s"
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (killed / "model").exists(), "a killed run must leave no output"

    resumed = subprocess.run(train_cmd(tiny, killed), check=True, capture_output=True, text=True)
    sel = json.loads((killed / "model" / "selection.json").read_text())
    ref = json.loads((straight / "model" / "selection.json").read_text())
    assert sel["resumed"] and not ref["resumed"], resumed.stderr[-2000:]
    assert ref["train_loss_steps"] == 24 and 0 < sel["train_loss_steps"] < 24  # its loss: since the resume
    assert sel["best_step"] == ref["best_step"]
    assert [e["eval_loss"] for e in sel["evaluations"]] == pytest.approx(
        [e["eval_loss"] for e in ref["evaluations"]], rel=1e-6
    )
    a = load_file(str(killed / "model" / "model.safetensors"))
    b = load_file(str(straight / "model" / "model.safetensors"))
    assert a.keys() == b.keys()
    for k in a:
        assert abs(a[k] - b[k]).max() < 1e-6, k


def test_sigint_saves_a_checkpoint_stops_promptly_and_resumes_to_the_same_result(tiny, tmp_path):
    """SIGINT to the training command alone (as Snakemake forwards it: lem.core.interrupt), which was started
    with SIGINT ignored (a background job of a non-interactive shell): it saves a checkpoint at the end of
    its step and exits 130 within seconds, leaving no output; the rerun resumes from that checkpoint."""
    uninterrupted, stopped = tmp_path / "uninterrupted", tmp_path / "stopped"
    training = {"max_steps": 600, "checkpoint_every": 200, "logging_steps": 200}
    subprocess.run(train_cmd(tiny, uninterrupted, **training), check=True, capture_output=True)
    proc = subprocess.Popen(train_cmd(tiny, stopped, **training), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))  # fmt: skip
    deadline = time.time() + 300
    while not list((stopped / "ckpt").glob("checkpoint-*/trainer_state.json")):
        assert proc.poll() is None, "the run ended before it could be interrupted"
        assert time.time() < deadline, "no checkpoint within 300 s"
        time.sleep(0.02)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert time.monotonic() - sent < 20, "the interrupted run did not stop promptly"
    assert proc.returncode == 130 and err.strip().splitlines()[-1].endswith(": interrupted"), err[-2000:]
    assert not (stopped / "model").exists(), "an interrupted run must leave no output"
    steps = [int(n.split("-")[1]) for n in checkpoints_on_disk(stopped)]
    assert "checkpoint of step" in err and 0 < max(steps) < 600, (steps, err[-2000:])
    assert (stopped / "ckpt" / f"checkpoint-{max(steps)}" / "optimizer.pt").exists()
    resumed = subprocess.run(train_cmd(tiny, stopped, **training), check=True, capture_output=True, text=True)
    sel = json.loads((stopped / "model" / "selection.json").read_text())
    ref = json.loads((uninterrupted / "model" / "selection.json").read_text())
    assert sel["resumed"] and sel["best_step"] == ref["best_step"], resumed.stderr[-2000:]
    a = load_file(str(stopped / "model" / "model.safetensors"))
    b = load_file(str(uninterrupted / "model" / "model.safetensors"))
    for k in a:
        assert abs(a[k] - b[k]).max() < 1e-6, k


def test_checkpoints_of_an_upstream_model_that_changed_are_not_resumed(tiny, straight, tmp_path):
    """The base model is retrained under other settings at the same path: its old checkpoints must not be
    resumed (the fingerprint hashes what --init and --features hold, not their names: the uninterrupted run's
    checkpoints, of the same model in another folder, are this folder's first run's)."""
    from transformers import AutoTokenizer

    init = tmp_path / "init"
    shutil.copytree(tiny["init"], init)
    cmd = train_cmd({**tiny, "init": init}, tmp_path)
    shutil.copytree(straight / "ckpt", tmp_path / "ckpt")  # keep_checkpoints: its checkpoints stay
    first = json.loads((straight / "model" / "selection.json").read_text())
    tok = AutoTokenizer.from_pretrained(str(init))
    arch = ModelSettings(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                         max_length=40)  # fmt: skip
    new_model(tok, arch, seed=2).save_pretrained(str(init))  # same path, other weights
    subprocess.run(cmd, check=True, capture_output=True)
    second = json.loads((tmp_path / "model" / "selection.json").read_text())
    assert not first["resumed"] and not second["resumed"]
    assert second["train_loss_steps"] == 24  # trained from the new model's step 0
    assert second["evaluations"] != first["evaluations"]


def dispatch_run(tiny: dict[str, Path], run: Path, mode: str, outer_level: str) -> dict:
    """A training job run under `resources.cpu_numerics` `mode` by a caller whose environment forces PyTorch's
    kernel dispatch to `outer_level`: its weights (bytes) and its records, wall-clock fields left out."""
    env = {**os.environ, "LEM_CPU_NUMERICS": mode, "ATEN_CPU_CAPABILITY": outer_level}
    subprocess.run(train_cmd(tiny, run, keep_checkpoints=False), check=True, capture_output=True, env=env)
    model = run / "model"

    def timeless(record: dict) -> dict:  # and the checkpoints' sizes: their trainer_state.json holds timings
        return {
            k: timeless(v) if isinstance(v, dict) else v
            for k, v in record.items()
            if not re.search(r"seconds|runtime|per_second|_bytes$", k)
        }

    return {
        "weights": (model / "model.safetensors").read_bytes(),
        "selection": timeless(json.loads((model / "selection.json").read_text())),
        "train_log": [
            timeless(json.loads(line)) for line in (model / "train_log.jsonl").read_text().splitlines()
        ],
        "masking_stats": (model / "masking_stats.json").read_text(),
    }


def test_weights_and_metrics_do_not_depend_on_the_callers_kernel_dispatch(tiny, tmp_path):
    """Under `portable` (the default), a caller's ATEN_CPU_CAPABILITY=default or =avx2 gives byte-identical
    weights and the same records: the `lem` command pins its own level before torch loads, as it would on
    another CPU. Under `native` the caller's level stands, and on an AVX2 CPU the weights differ: what the pin
    is for (and what makes this test able to fail)."""
    runs = {
        (mode, level): dispatch_run(tiny, tmp_path / f"{mode}-{level}", mode, level)
        for mode in ("portable", "native")
        for level in ("default", "avx2")
    }
    portable_default, portable_avx2 = runs["portable", "default"], runs["portable", "avx2"]
    assert portable_default["weights"] == portable_avx2["weights"]
    assert portable_default == portable_avx2
    if is_x86(platform.machine()) and {"avx2", "fma"} <= cpu_flags():
        assert runs["native", "default"]["weights"] != runs["native", "avx2"]["weights"], (
            "without the pin the two kernel levels trained the same weights: this test no longer shows the pin"
        )
