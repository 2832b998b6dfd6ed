"""Continual pre-training: automatic checkpoint choice, and a killed run resuming to the same result."""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from safetensors.numpy import load_file
from support.builders import english_features

from lem.annotate.run import annotate_file
from lem.annotate.settings import AnnotateSettings
from lem.core.numerics import cpu_flags, is_x86
from lem.core.training import steps_per_epoch, training_schedule
from lem.core.training.checkpoints import fingerprint, prepare_checkpoint_dir
from lem.features import build_pair_features
from lem.pretrain import ModelSettings, PretrainTrainingSettings, new_model


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> dict[str, Path]:
    """A generated corpus, its annotations, a tokenizer, English MLM features, si-en TLM features (20
    training pairs) and a random tiny model."""
    from transformers import AutoTokenizer

    root = tmp_path_factory.mktemp("pretrain")
    made = english_features(root, mono_sentences=600, para_train=20, vocab_size=600, valid=0.1)
    lex, settings = made["lexicon"], made["en_settings"]
    si_settings = AnnotateSettings.from_dict(
        {"pos": {"backend": "lexicon", "format": "tsv", "path": str(lex / "si.pos.tsv")},
         "ner": {"backend": "lexicon", "format": "gazetteer_tsv", "path": str(lex / "si.ner.tsv")}}
    )  # fmt: skip
    para = {}
    for split in ("train", "valid"):
        tsv = root / "corpus" / "para" / f"si-en.{split}.tsv"
        for col, (lang, s) in enumerate([("si", si_settings), ("en", settings)]):
            para[split, lang] = root / f"para.{split}.{lang}.parquet"
            annotate_file(lang, tsv, para[split, lang], s, column=col)
    build_pair_features(
        root / "tok", "si-en", para["train", "si"], para["train", "en"], para["valid", "si"],
        para["valid", "en"], 40, root / "para_feat",
    )  # fmt: skip
    tok = AutoTokenizer.from_pretrained(str(root / "tok"))
    model = new_model(
        tok,
        ModelSettings(
            hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64, max_length=40
        ),
        seed=1,
    )
    model.save_pretrained(str(root / "init"))
    tok.save_pretrained(str(root / "init"))
    return {"root": root, "init": root / "init", "features": root / "feat", "para": root / "para_feat"}


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


def test_killed_run_resumes_to_the_uninterrupted_result(tiny, tmp_path):
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    subprocess.run(train_cmd(tiny, straight), check=True, capture_output=True)

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
    straight, stopped = tmp_path / "straight", tmp_path / "stopped"
    training = {"max_steps": 600, "checkpoint_every": 200, "logging_steps": 200}
    subprocess.run(train_cmd(tiny, straight, **training), check=True, capture_output=True)
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
    ref = json.loads((straight / "model" / "selection.json").read_text())
    assert sel["resumed"] and sel["best_step"] == ref["best_step"], resumed.stderr[-2000:]
    a = load_file(str(stopped / "model" / "model.safetensors"))
    b = load_file(str(straight / "model" / "model.safetensors"))
    for k in a:
        assert abs(a[k] - b[k]).max() < 1e-6, k


def test_checkpoints_of_an_upstream_model_that_changed_are_not_resumed(tiny, tmp_path):
    """The base model is retrained under other settings at the same path: its old checkpoints must not be
    resumed (the fingerprint hashes what --init and --features hold, not their names)."""
    from transformers import AutoTokenizer

    init = tmp_path / "init"
    shutil.copytree(tiny["init"], init)
    cmd = train_cmd({**tiny, "init": init}, tmp_path)
    subprocess.run(cmd, check=True, capture_output=True)  # keep_checkpoints: its checkpoints stay
    first = json.loads((tmp_path / "model" / "selection.json").read_text())
    shutil.rmtree(tmp_path / "model")
    tok = AutoTokenizer.from_pretrained(str(init))
    arch = ModelSettings(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                         max_length=40)  # fmt: skip
    new_model(tok, arch, seed=2).save_pretrained(str(init))  # same path, other weights
    subprocess.run(cmd, check=True, capture_output=True)
    second = json.loads((tmp_path / "model" / "selection.json").read_text())
    assert not first["resumed"] and not second["resumed"]
    assert second["train_loss_steps"] == 24  # trained from the new model's step 0
    assert second["evaluations"] != first["evaluations"]


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
