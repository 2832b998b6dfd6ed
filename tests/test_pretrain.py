"""Continual pre-training: automatic checkpoint choice, and a killed run resuming to the same result."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from safetensors.numpy import load_file

from lem.annotate.run import annotate_file
from lem.annotate.settings import AnnotateSettings
from lem.corpus.generate import GenerateSettings, generate
from lem.features import build_mono_features
from lem.pretrain import ModelSettings, TrainSettings, fingerprint, new_model, prepare_checkpoint_dir
from lem.tokenizer import train_tokenizer


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> dict[str, Path]:
    """A generated English corpus, its annotations, a tokenizer, features and a random tiny model."""
    from transformers import AutoTokenizer

    root = tmp_path_factory.mktemp("pretrain")
    generate(
        GenerateSettings.from_dict(
            {"mono_sentences": 600, "para_train": 20, "para_valid": 5, "news_documents": 2,
             "sentiment_examples": 20, "noisy_pairs": 8}
        ),
        root / "corpus", root / "eval",
    )  # fmt: skip
    lex = root / "corpus" / "lexicon"
    settings = AnnotateSettings.from_dict(
        {"pos": {"backend": "lexicon", "format": "tsv", "path": str(lex / "en.pos.tsv")},
         "ner": {"backend": "lexicon", "format": "gazetteer_tsv", "path": str(lex / "en.ner.tsv")}}
    )  # fmt: skip
    annotate_file("en", root / "corpus" / "mono" / "en.txt", root / "en.parquet", settings)
    train_tokenizer([root / "corpus" / "mono" / "en.txt"], 600, root / "tok", seed=1)
    build_mono_features(root / "tok", root / "en.parquet", "en", 40, 0.1, 1, root / "feat")
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
    return {"root": root, "init": root / "init", "features": root / "feat"}


def train_cmd(tiny: dict[str, Path], run: Path) -> list[str]:
    settings = {
        "training": {"max_steps": 24, "batch_size": 8, "learning_rate": 0.001, "checkpoint_every": 6,
                     "logging_steps": 6, "seed": 5, "keep_checkpoints": True, "stats_examples": 50},
        "masking": {"strategy": "lem", "entity_types": ["ne", "noun"]},
    }  # fmt: skip
    return [sys.executable, "-m", "lem.cli", "pretrain", "continue", "--stage", "mono",
            "--init", str(tiny["init"]), "--features", str(tiny["features"]),
            "--settings", json.dumps(settings), "--checkpoints", str(run / "ckpt"),
            "--threads", "1", "--out", str(run / "model")]  # fmt: skip


def test_best_checkpoint_is_chosen_by_fixed_mask_validation_loss(tiny, tmp_path):
    subprocess.run(train_cmd(tiny, tmp_path), check=True, capture_output=True)
    sel = json.loads((tmp_path / "model" / "selection.json").read_text())
    losses = {e["step"]: e["eval_loss"] for e in sel["evaluations"]}
    assert sorted(losses) == [6, 12, 18, 24]
    assert sel["best_step"] == min(losses, key=losses.get)
    assert sel["reloaded_eval_loss"] == pytest.approx(losses[sel["best_step"]], rel=1e-5)
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
    while not (killed / "ckpt" / "checkpoint-12" / "trainer_state.json").exists():
        assert proc.poll() is None, "the run ended before it could be killed"
        assert time.time() < deadline, "no checkpoint-12 within 300 s"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (killed / "model").exists(), "a killed run must leave no output"

    resumed = subprocess.run(train_cmd(tiny, killed), check=True, capture_output=True, text=True)
    sel = json.loads((killed / "model" / "selection.json").read_text())
    ref = json.loads((straight / "model" / "selection.json").read_text())
    assert sel["resumed"] and not ref["resumed"], resumed.stderr[-2000:]
    assert sel["best_step"] == ref["best_step"]
    assert [e["eval_loss"] for e in sel["evaluations"]] == pytest.approx(
        [e["eval_loss"] for e in ref["evaluations"]], rel=1e-6
    )
    a = load_file(str(killed / "model" / "model.safetensors"))
    b = load_file(str(straight / "model" / "model.safetensors"))
    assert a.keys() == b.keys()
    for k in a:
        assert abs(a[k] - b[k]).max() < 1e-6, k


def test_checkpoints_of_other_settings_are_not_resumed(tmp_path):
    ckpt = tmp_path / "ckpt"
    assert prepare_checkpoint_dir(ckpt, fingerprint({"a": 1})) is False
    (ckpt / "checkpoint-5").mkdir()
    assert prepare_checkpoint_dir(ckpt, fingerprint({"a": 1})) is True
    assert prepare_checkpoint_dir(ckpt, fingerprint({"a": 2})) is False
    assert not (ckpt / "checkpoint-5").exists()


def test_training_settings_reject_unknown_keys():
    with pytest.raises(ValueError, match="unknown key"):
        TrainSettings.from_dict({"epochs": 1, "learnin_rate": 0.1})
