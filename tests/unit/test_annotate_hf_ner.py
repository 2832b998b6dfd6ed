from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

pytest.importorskip("transformers")

from lem.cli import command  # noqa: E402

main = command("annotate")


def tiny_xlmr(out, texts):
    """A random tiny XLM-R and a tiny fast Unigram tokenizer with XLM-R's special tokens."""
    from lem.stand_in import save_tiny_xlmr

    save_tiny_xlmr(out, texts)


def test_train_ner_then_annotate(tmp_path):
    import torch

    torch.manual_seed(0)
    conll = "John B-PER\nlives O\nin O\nColombo B-LOC\n.\tO\n\nMary B-PER\nworks O\nat O\nUNICEF B-ORG\n"
    (tmp_path / "train.conll").write_text(conll * 1, encoding="utf-8")
    tiny_xlmr(tmp_path / "base", ["John lives in Colombo .", "Mary works at UNICEF"] * 20)
    settings = {"epochs": 30, "learning_rate": 0.01, "batch_size": 2, "max_length": 32, "device": "cpu"}
    rc = main([
        "train-ner", "--base-model", str(tmp_path / "base"), "--train", str(tmp_path / "train.conll"),
        "--valid", str(tmp_path / "train.conll"), "--settings", json.dumps(settings), "--out", str(tmp_path / "ner"),
    ])  # fmt: skip
    assert rc == 0
    assert (tmp_path / "ner" / "model.safetensors").is_file() and not list((tmp_path / "ner").glob("*.bin"))
    metrics = json.loads((tmp_path / "ner" / "train_metrics.json").read_text())
    assert metrics["valid"]["f1"] > 0.5  # memorises its 2 training sentences
    (tmp_path / "in.txt").write_text("John lives in Colombo.\n\n", encoding="utf-8")
    ner = {"backend": "hf_ner", "path": str(tmp_path / "ner"), "device": "cpu", "batch_size": 2}
    out = tmp_path / "a.parquet"
    assert (
        main(
            [
                "run",
                "--lang",
                "en",
                "--input",
                str(tmp_path / "in.txt"),
                "--settings",
                json.dumps({"ner": ner}),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    rows = pq.read_table(out).to_pylist()
    assert rows[0]["words"] == ["John", "lives", "in", "Colombo", "."] and len(rows[0]["ner"]) == 5
    assert all(x == "O" or x[:2] in ("B-", "I-") for x in rows[0]["ner"]) and rows[1]["ner"] == []


def test_train_ner_keeps_the_best_epoch_without_changing_the_training(tmp_path):
    """With a validation set the model is evaluated every epoch and the best epoch is kept; the evaluations
    leave the training itself as it is without them (same training loss)."""
    from lem.annotate.hf_ner import TrainNERSettings, train_ner

    sents = [[("John", "B-PER"), ("lives", "O"), ("in", "O"), ("Colombo", "B-LOC")],
             [("Mary", "B-PER"), ("works", "O"), ("at", "O"), ("UNICEF", "B-ORG")]]  # fmt: skip
    tiny_xlmr(tmp_path / "base", ["John lives in Colombo .", "Mary works at UNICEF"] * 20)
    s = TrainNERSettings.from_dict({"epochs": 4, "learning_rate": 0.01, "batch_size": 2, "max_length": 32,
                                    "device": "cpu"})  # fmt: skip
    with_valid = train_ner(str(tmp_path / "base"), sents, tmp_path / "a", s, valid=sents)
    without = train_ner(str(tmp_path / "base"), sents, tmp_path / "b", s)
    assert with_valid["train_loss"] == without["train_loss"]
    sel = with_valid["selection"]
    assert len(sel["epochs"]) == 4 and sel["best_f1"] == max(e["f1"] for e in sel["epochs"])
    assert "selection" not in without and (tmp_path / "a" / "training_args.json").is_file()


def test_hf_ner_caps_the_length_at_the_model_positions_and_counts_truncated_sentences(tmp_path):
    """A sentence longer than the model's positions (a generated world's long sentence on a shrunken model)
    is tagged, not an index error: the words past the model's length are tagged O and counted."""
    from transformers import AutoModelForTokenClassification

    from lem.annotate.hf_ner import HFNER

    tiny_xlmr(tmp_path / "base", ["John lives in Colombo .", "Mary works at UNICEF"] * 20)
    model = AutoModelForTokenClassification.from_pretrained(
        tmp_path / "base", num_labels=3, id2label={0: "O", 1: "B-PER", 2: "I-PER"}
    )
    model.save_pretrained(tmp_path / "ner")
    (tmp_path / "ner").joinpath("tokenizer.json").write_bytes(
        (tmp_path / "base" / "tokenizer.json").read_bytes()
    )
    for name in ("tokenizer_config.json", "special_tokens_map.json"):
        if (tmp_path / "base" / name).exists():
            (tmp_path / "ner" / name).write_bytes((tmp_path / "base" / name).read_bytes())
    tagger = HFNER(str(tmp_path / "ner"), device="cpu", max_length=256)
    assert tagger.max_length == 62  # 64 positions, 2 taken by the padding offset
    long = ["John", "lives", "in", "Colombo"] * 40
    tags = tagger.tag([long, ["Mary"]])
    assert len(tags[0]) == len(long) and tags[0][-1] == "O" and tagger.truncated == 1
