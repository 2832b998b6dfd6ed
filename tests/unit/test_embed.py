"""Sentence embeddings with a tiny random XLM-R and a tiny word-level tokenizer (both built here)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lem import embed
from lem.cli import command
from lem.core.embeddings import read_sentences
from lem.embed import EmbedSettings


def embed_encode(argv):
    return command("embed")(["encode", *argv])


CPU = {"device": "cpu"}  # these tests assume the CPU's float32 numbers, on a GPU node too

WORDS = "the a cat dog sat on mat ran far fast slow big small red blue".split()
SENTS = ["the cat sat on the mat", "a dog ran", "big red dog ran far fast", "cat", "small blue cat sat slow"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import XLMRobertaConfig, XLMRobertaModel

    from lem.stand_in import xlmr_fast_tokenizer, xlmr_template

    vocab = {t: i for i, t in enumerate(["<s>", "<pad>", "</s>", "<unk>", *WORDS, "<mask>"])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    xlmr_template(tok)
    fast = xlmr_fast_tokenizer(tok)
    torch.manual_seed(0)
    cfg = XLMRobertaConfig(
        vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=40, pad_token_id=1, bos_token_id=0, eos_token_id=2,
    )  # fmt: skip
    d = tmp_path_factory.mktemp("tiny-xlmr")
    XLMRobertaModel(cfg, add_pooling_layer=False).save_pretrained(d)
    fast.save_pretrained(d)
    return d


def test_embeddings_are_normalised_deterministic_and_in_file_order(model_dir):
    e = embed.encode(model_dir, SENTS, EmbedSettings(batch_size=2, **CPU))
    assert e.dtype == np.float32 and e.shape == (len(SENTS), 32)
    np.testing.assert_allclose(np.linalg.norm(e, axis=1), 1.0, rtol=1e-5)
    assert (embed.encode(model_dir, SENTS, EmbedSettings(batch_size=2, **CPU)) == e).all()
    # batch composition and order do not matter (padding is masked out), beyond float rounding
    np.testing.assert_allclose(
        embed.encode(model_dir, SENTS, EmbedSettings(batch_size=64, **CPU)), e, atol=1e-5
    )
    np.testing.assert_allclose(
        embed.encode(model_dir, SENTS[::-1], EmbedSettings(batch_size=1, **CPU))[::-1], e, atol=1e-5
    )


def test_mean_and_cls_pooling_over_a_chosen_layer(model_dir):
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok, model = AutoTokenizer.from_pretrained(model_dir), AutoModel.from_pretrained(model_dir).eval()
    enc = tok(SENTS[0], return_tensors="pt")
    with torch.no_grad():
        hs = model(**enc, output_hidden_states=True).hidden_states
    for pooling, layer in [("mean", -1), ("cls", -1), ("mean", 0), ("cls", 1)]:
        want = hs[layer][0].mean(0) if pooling == "mean" else hs[layer][0, 0]
        want = (want / want.norm()).numpy()
        got = embed.encode(model_dir, SENTS, EmbedSettings(pooling=pooling, layer=layer, **CPU))[0]
        np.testing.assert_allclose(got, want, atol=1e-5)
    with pytest.raises(ValueError, match="layer=5"):
        embed.encode(model_dir, SENTS, EmbedSettings(layer=5, **CPU))


def test_embed_cli_writes_npy_and_ids(model_dir, tmp_path):
    rows = "".join(f"s{i}\td{i % 2}\t{t}\n" for i, t in enumerate(SENTS))
    (tmp_path / "s.tsv").write_text("id\tdoc\ttext\n" + rows, encoding="utf-8")
    out = tmp_path / "out" / "si.npy"
    args = ["--model", str(model_dir), "--sentences", str(tmp_path / "s.tsv"), "--out", str(out)]
    assert embed_encode([*args, "--settings", '{"batch_size": 3, "device": "cpu"}']) == 0
    e = np.load(out)
    assert e.shape == (5, 32) and e.dtype == np.float32
    assert (tmp_path / "out" / "si.ids.txt").read_text().split() == [f"s{i}" for i in range(5)]
    meta = json.loads((tmp_path / "out" / "si.meta.json").read_text())
    assert meta["settings"]["precision"] == "float32" and meta["device"] == "cpu"
    assert meta["sentences"] == 5 and meta["dim"] == 32


def test_embed_cli_several_files_in_one_call_equal_one_call_each(model_dir, tmp_path, capsys):
    head = ["--model", str(model_dir), "--settings", '{"batch_size": 2, "device": "cpu"}']
    names = {"a": SENTS, "b": SENTS[::-1][:3], "c": SENTS[1:]}
    for name, sents in names.items():
        rows = "".join(f"{name}{i}\t{t}\n" for i, t in enumerate(sents))
        (tmp_path / f"{name}.tsv").write_text("id\ttext\n" + rows, encoding="utf-8")

    def files(name: str, folder: str) -> list[str]:
        return ["--sentences", str(tmp_path / f"{name}.tsv"), "--out", str(tmp_path / folder / f"{name}.npy")]

    assert embed_encode(head + [arg for name in names for arg in files(name, "many")]) == 0  # one model load
    for name in names:
        assert embed_encode(head + files(name, "one")) == 0
        for ext in (".npy", ".ids.txt", ".meta.json"):
            many, one = tmp_path / "many" / f"{name}{ext}", tmp_path / "one" / f"{name}{ext}"
            assert many.read_bytes() == one.read_bytes(), many
    assert embed_encode(head + files("a", "x") + ["--sentences", str(tmp_path / "b.tsv")]) == 1
    assert "one --out per --sentences" in capsys.readouterr().err


def test_precision_is_float32_by_default_and_half_precision_is_opt_in(model_dir, tmp_path):
    import torch

    assert EmbedSettings().precision == "float32"
    full = embed.encode(model_dir, SENTS, EmbedSettings(**CPU))
    half = embed.encode(model_dir, SENTS, EmbedSettings(precision="bf16", **CPU))
    assert half.dtype == np.float32  # pooled and normalised in float32 whatever the compute type
    assert not (half == full).all()  # bf16 really ran: its rounding shows
    np.testing.assert_allclose(half, full, atol=0.05)
    with pytest.raises(ValueError, match="precision='half'"):
        EmbedSettings.from_dict({"precision": "half"})
    if torch.cuda.is_available():  # on a GPU node: the default stays float32 there too
        np.testing.assert_allclose(
            embed.encode(model_dir, SENTS, EmbedSettings(device="cuda")), full, atol=1e-4
        )


def test_settings_and_sentence_file_errors(tmp_path):
    with pytest.raises(ValueError, match="embed settings: unknown key"):
        EmbedSettings.from_dict({"pool": "mean"})
    with pytest.raises(ValueError, match="pooling"):
        EmbedSettings.from_dict({"pooling": "max"})
    assert EmbedSettings.from_dict({}) == EmbedSettings("mean", -1, 64, 128, "auto", "float32")
    (tmp_path / "bad.tsv").write_text("id\tdoc\ttext\na\td\tok\nb\tno-text\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.tsv:3"):
        read_sentences(tmp_path / "bad.tsv")
    (tmp_path / "nodoc.tsv").write_text("id\ttext\na\thello world\n", encoding="utf-8")
    s = read_sentences(tmp_path / "nodoc.tsv")
    assert s.ids == ["a"] and s.docs == [""] and s.texts == ["hello world"]
