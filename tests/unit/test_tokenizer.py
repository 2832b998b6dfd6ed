"""The trained tokenizer follows XLM-R's conventions, reloads identically and is deterministic."""

from __future__ import annotations

import numpy as np
import pytest
from transformers import AutoTokenizer

from lem.cli import command
from lem.tokenizer import train_tokenizer

main = command("tokenizer")

EN = "the road bank river Kamal went to Colombo city market saw a big red house".split()
SI = "ශ්\u200dරී ලංකා කොළඹ නගරය මිනිසා ගියේය පාර ගඟ".split()
TA = "தமிழ்நாடு அரசு சென்னை நகரம் மனிதன் சென்றான் சாலை".split()


def write_corpus(root):
    rng = np.random.default_rng(0)
    lines = [" ".join(rng.choice(ws, rng.integers(3, 10))) + "." for ws in [EN, SI, TA] * 100]
    (root / "mono.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    pairs = [" ".join(rng.choice(SI, 4)) + "\t" + " ".join(rng.choice(EN, 4)) for _ in range(50)]
    (root / "para.tsv").write_text("\n".join(pairs) + "\n", encoding="utf-8")
    return [root / "mono.txt", root / "para.tsv"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("tok")
    inputs = write_corpus(root)
    return root, inputs, train_tokenizer(inputs, 200, root / "tok", seed=3)


def test_xlmr_conventions_and_offsets(trained):
    _, _, path = trained
    tok = AutoTokenizer.from_pretrained(str(path))
    assert tok.convert_ids_to_tokens([0, 1, 2, 3]) == ["<s>", "<pad>", "</s>", "<unk>"]
    assert tok.mask_token_id == len(tok) - 1 and tok.mask_token == "<mask>"
    enc = tok("the road.", "ලංකා", return_offsets_mapping=True)
    pieces = tok.convert_ids_to_tokens(enc["input_ids"])
    assert pieces[0] == "<s>" and pieces[-1] == "</s>" and pieces.count("</s>") == 3
    assert pieces[pieces.index("</s>") + 1] == "</s>"
    text = "the road."
    single = tok(text, return_offsets_mapping=True)
    spans = [text[a:b] for a, b in single["offset_mapping"][1:-1]]
    assert "".join(spans).replace(" ", "") == "theroad."
    # the nmt_nfkc normaliser survives save/load (a plain NFKC normaliser would not)
    assert tok("ｒｏａｄ")["input_ids"] == tok("road")["input_ids"]


def test_deterministic_for_same_inputs_and_seed(trained, tmp_path):
    root, inputs, path = trained
    again = train_tokenizer(inputs, 200, tmp_path / "again", seed=3)
    assert (path / "tokenizer.json").read_bytes() == (again / "tokenizer.json").read_bytes()


def test_cli_and_bad_input(tmp_path):
    inputs = write_corpus(tmp_path)
    assert (
        main(["train", "--inputs", *map(str, inputs), "--vocab-size", "150", "--out", str(tmp_path / "t")])
        == 0
    )
    assert AutoTokenizer.from_pretrained(str(tmp_path / "t")).tokenize("road")
    (tmp_path / "x.csv").write_text("a,b\n")
    with pytest.raises(ValueError, match="x.csv"):
        train_tokenizer([tmp_path / "x.csv"], 100, tmp_path / "u")
