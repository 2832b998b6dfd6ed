"""Sentiment fine-tuning through lem.core.training: early stopping on validation macro-F1, the best epoch kept
and recorded, reproducible."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lem.cli import command
from lem.sentiment import SentimentSettings, finetune


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, Path]:
    from lem.corpus.generate import GenerateSettings, generate
    from lem.data.sentiment import SentimentDataSettings as Prepare
    from lem.data.sentiment import prepare_sentiment
    from lem.pretrain import ModelSettings, new_model
    from lem.tokenizer import train_tokenizer

    root = tmp_path_factory.mktemp("sentiment")
    generate(
        GenerateSettings.from_dict(
            {"mono_sentences": 200, "para_train": 10, "para_valid": 5, "news_documents": 2,
             "sentiment_examples": 150, "noisy_pairs": 8}
        ),
        root / "corpus", root / "eval",
    )  # fmt: skip
    prepare_sentiment(
        root / "eval" / "sentiment" / "generated.csv",
        Prepare.from_dict({"text_column": "Sentence", "label_column": "Sentiment", "seed": 13}),
        root / "sent",
    )
    train_tokenizer(
        [root / "corpus" / "mono" / f"{x}.txt" for x in ("en", "si")], 400, root / "model", seed=1
    )
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(root / "model"))
    new_model(tok, ModelSettings(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                                 max_length=40), seed=1).save_pretrained(str(root / "model"))  # fmt: skip
    return {"model": root / "model", **{k: root / "sent" / f"{k}.tsv" for k in ("train", "valid", "test")}}


def test_finetune_keeps_the_best_epoch_and_is_reproducible(data, tmp_path):
    settings = SentimentSettings.from_dict(
        {"epochs": 3, "batch_size": 16, "learning_rate": 0.002, "max_length": 40}
    )
    a = finetune(
        str(data["model"]), str(data["train"]), str(data["valid"]), str(data["test"]), settings, seed=1
    )
    assert a["labels"] == sorted(a["counts"]["train"]) and 0 <= a["macro_f1"] <= 1
    assert len(a["valid_macro_f1_per_epoch"]) == a["epochs_run"] == a["max_epochs"] == 3
    assert a["valid_macro_f1"] == max(a["valid_macro_f1_per_epoch"])  # the epoch kept is the best one
    assert a["valid_macro_f1_per_epoch"][a["best_epoch"] - 1] == a["valid_macro_f1"]
    assert sum(a["test_pred_counts"].values()) == len(a["test_pred"]) == len(a["test_gold"])
    out = tmp_path / "m.json"
    argv = ["--model", str(data["model"]), "--train", str(data["train"]), "--valid", str(data["valid"]),
            "--test", str(data["test"]), "--seed", "1", "--threads", "1", "--out", str(out),
            "--settings", json.dumps({"epochs": 3, "batch_size": 16, "learning_rate": 0.002, "max_length": 40})]  # fmt: skip
    stale = tmp_path / ".m.json.work" / "checkpoint-3"  # what a killed job left: the rerun removes it
    stale.mkdir(parents=True)
    assert command("sentiment")(["finetune", *argv]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]
    b = json.loads(out.read_text())
    for key in ("macro_f1", "accuracy", "valid_macro_f1", "per_class_f1", "best_epoch", "epochs_run"):
        assert b[key] == a[key], key


def test_one_job_runs_every_fine_tuning_seed_as_separate_runs_would(data, tmp_path, capsys):
    """`--seed 2 1 --out A B`: one process, one file per seed, each with its `finetune_seed` key and the
    metrics of that seed run alone (the seeds reset every random choice; the order does not matter)."""
    flat = {"epochs": 2, "batch_size": 16, "learning_rate": 0.002, "max_length": 40}
    paths = [str(data[k]) for k in ("model", "train", "valid", "test")]
    alone = {seed: finetune(*paths, SentimentSettings.from_dict(flat), seed=seed) for seed in (1, 2)}
    outs = [tmp_path / "f2" / "metrics.json", tmp_path / "f1" / "metrics.json"]
    keys = {"dataset": "d", "pair": "si-en", "seed": "13", "task": "sentiment", "variant": "lem"}
    argv = ["finetune", "--model", paths[0], "--train", paths[1], "--valid", paths[2], "--test", paths[3],
            "--seed", "2", "1", "--threads", "1", "--settings", json.dumps(flat), "--keys", json.dumps(keys),
            "--out", *map(str, outs)]  # fmt: skip
    assert command("sentiment")(argv) == 0
    for seed, out in zip((2, 1), outs, strict=True):
        got = json.loads(out.read_text())
        assert got["keys"] == {**keys, "finetune_seed": str(seed)} and list(got["keys"]) == sorted(
            got["keys"]
        )
        for key in ("macro_f1", "valid_macro_f1_per_epoch", "best_epoch", "test_pred", "seed"):
            assert got[key] == alone[seed][key], (seed, key)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f1", "f2"]  # no checkpoint folder left
    capsys.readouterr()
    for seeds, outs_, message in (
        (["1", "2"], ["a.json"], "2 seeds but 1 output files"),
        (["1", "1"], ["a.json", "b.json"], "repeats a seed"),
        (["1", "2"], ["a.json", "a.json"], "an output file named twice"),
    ):
        bad = [*argv[: argv.index("--seed")], "--seed", *seeds, "--out", *(str(tmp_path / o) for o in outs_)]
        assert command("sentiment")(bad) == 1
        assert message in capsys.readouterr().err.strip().splitlines()[-1]
        assert not (tmp_path / "a.json").exists()


def test_early_stopping_ends_when_validation_macro_f1_stalls(data):
    """A learning rate too small to change any prediction: validation macro-F1 never rises after epoch 1,
    so training stops `patience` epochs later, keeps epoch 1 and says so; without patience it runs all."""
    flat = {"epochs": 6, "batch_size": 16, "learning_rate": 1e-12, "max_length": 40}
    paths = [str(data[k]) for k in ("model", "train", "valid", "test")]
    stopped = finetune(*paths, SentimentSettings.from_dict({**flat, "patience": 1}), seed=1)
    assert stopped["epochs_run"] == 2 and stopped["best_epoch"] == 1 and stopped["stopped_early"]
    assert len(set(stopped["valid_macro_f1_per_epoch"])) == 1 and stopped["max_epochs"] == 6
    every = finetune(*paths, SentimentSettings.from_dict({**flat, "epochs": 3, "patience": None}), seed=1)
    assert every["epochs_run"] == 3 and every["best_epoch"] == 1 and not every["stopped_early"]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"patience": 0}, "patience"),
        ({"epochs": 2.5}, "whole number of epochs"),
        ({"class_weights": "inverse"}, "class_weights"),
    ],
)
def test_settings_refused_naming_the_key(settings, message):
    from lem.core.settings import SettingsError

    with pytest.raises(SettingsError, match=message):
        SentimentSettings.from_dict(settings)


def test_a_max_length_beyond_the_model_is_refused_before_training(data, tmp_path, capsys):
    """Before: capped without a word (config sentiment.training.max_length: 4096 on a 40-token model)."""
    out = tmp_path / "m.json"
    argv = ["finetune", "--model", str(data["model"]), "--train", str(data["train"]), "--valid", str(data["valid"]),
            "--test", str(data["test"]), "--seed", "1", "--out", str(out), "--settings", '{"max_length": 4096}']  # fmt: skip
    assert command("sentiment")(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(
        "lem sentiment finetune: --settings max_length (config sentiment.training.max_length): 4096"
    )
    assert "at most 40" in err and not out.exists() and not (tmp_path / ".m.json.work").exists()


def test_balanced_class_weights_weigh_each_class_as_macro_f1_does():
    import torch

    from lem.sentiment import class_weights, weighted_loss

    labels = ["Neutral"] * 6 + ["Negative"] * 3 + ["Positive"]
    names = ["Negative", "Neutral", "Positive"]
    assert class_weights(labels, names, "none") is None
    w = class_weights(labels, names, "balanced")
    assert w == pytest.approx([10 / 9, 10 / 18, 10 / 3])
    counts = [labels.count(n) for n in names]
    assert [c * x for c, x in zip(counts, w, strict=True)] == pytest.approx([10 / 3] * 3)  # equal totals
    logits = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.2, 0.3], [-1.0, 1.0, 0.0]])
    gold = torch.tensor([0, 2, 1])
    per_row = torch.nn.functional.cross_entropy(logits, gold, reduction="none")
    weight = torch.tensor(w)[gold]
    want = float((weight * per_row).sum() / weight.sum())
    assert float(weighted_loss(w)({"logits": logits}, gold)) == pytest.approx(want, rel=1e-6)


def test_balanced_class_weights_reach_the_training_loss(data):
    """The same run with and without balanced weights: the weights change the trained model (its
    validation scores), and the weighted run is reproducible."""
    base = {"epochs": 2, "batch_size": 16, "learning_rate": 0.002, "max_length": 40}
    paths = [str(data[k]) for k in ("model", "train", "valid", "test")]
    plain = finetune(*paths, SentimentSettings.from_dict(base), seed=1)
    weighted = SentimentSettings.from_dict({**base, "class_weights": "balanced"})
    a, b = (finetune(*paths, weighted, seed=1) for _ in range(2))
    assert a["valid_macro_f1_per_epoch"] == b["valid_macro_f1_per_epoch"] and a["test_pred"] == b["test_pred"]
    assert (
        a["valid_macro_f1_per_epoch"] != plain["valid_macro_f1_per_epoch"]
        or a["test_pred"] != plain["test_pred"]
    )


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("at_seed", [1, 2])
def test_an_interrupt_swallowed_during_a_seed_fails_the_job_and_removes_every_output(
    at_seed, tmp_path, monkeypatch, capsys
):
    """Issue 51: a SIGINT whose KeyboardInterrupt is swallowed where it lands (datasets' `Dataset.__del__`)
    during seed 1 of two (the next seed is never trained) or during the last (checked at the end): the job
    exits 130, and none of its --out files is left, not even a finished seed's."""
    import signal

    import lem.sentiment

    class Swallows:
        def __del__(self):
            signal.raise_signal(signal.SIGINT)

    trained = []

    def fake_seed(prep, settings, seed, work_dir=None):
        trained.append(seed)
        work_dir.mkdir(parents=True)  # what a real seed leaves while it runs
        if seed == at_seed:
            Swallows()
        return {"macro_f1": 0.5, "seed": seed}

    monkeypatch.setattr(lem.sentiment, "prepare", lambda *a: None)
    monkeypatch.setattr(lem.sentiment, "finetune_prepared", fake_seed)
    outs = [tmp_path / "s1" / "metrics.json", tmp_path / "s2" / "metrics.json"]
    argv = ["finetune", "--model", "m", "--train", "t", "--valid", "v", "--test", "x", "--seed", "1", "2",
            "--out", *map(str, outs)]  # fmt: skip
    assert command("sentiment")(argv) == 130
    assert capsys.readouterr().err.strip().splitlines()[-1] == "lem sentiment finetune: interrupted"
    assert trained == [1, 2][:at_seed]
    assert [p for p in tmp_path.rglob("*") if not p.is_dir()] == []
    assert not list(tmp_path.rglob(".*.work"))
