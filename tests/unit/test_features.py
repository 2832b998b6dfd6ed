"""Features carry SP-word ids and OR-ed annotation flags; pairs keep both sides; bad input names the row."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from datasets import load_from_disk
from transformers import AutoTokenizer

from lem.cli import command
from lem.core.entities import FLAG_NE as NE
from lem.core.entities import FLAG_NOUN as NOUN
from lem.core.entities import FLAG_VERB as VERB
from lem.core.text import word_spans
from lem.features import build_mono_features, pair_keep
from lem.tokenizer import train_tokenizer

main = command("features")

TAGS = {"Kamal": NE, "Colombo": NE | NOUN, "road": NOUN, "house": NOUN, "went": VERB, "saw": VERB}
EN = "the road bank river Kamal went to Colombo city market saw a big red house".split()
SI = "ශ්\u200dරී ලංකා කොළඹ නගරය මිනිසා ගියේය පාර ගඟ".split()


def write_annotations(path, texts, tags=TAGS):
    rows = []
    for i, text in enumerate(texts):
        spans = word_spans(text)
        words = [text[a:b] for a, b in spans]
        rows.append(
            {"sent_id": i, "text": text, "words": words, "starts": [a for a, _ in spans],
             "ends": [b for _, b in spans], "pos": [""] * len(words), "coarse": ["OTHER"] * len(words),
             "ner": ["O"] * len(words), "flags": [tags.get(w, 0) for w in words]}
        )  # fmt: skip
    schema = pa.schema(
        [("sent_id", pa.int64()), ("text", pa.string()), ("words", pa.list_(pa.string())),
         ("starts", pa.list_(pa.int32())), ("ends", pa.list_(pa.int32())), ("pos", pa.list_(pa.string())),
         ("coarse", pa.list_(pa.string())), ("ner", pa.list_(pa.string())), ("flags", pa.list_(pa.uint8()))]
    )  # fmt: skip
    pq.write_table(pa.Table.from_pandas(pd.DataFrame(rows), schema=schema, preserve_index=False), path)
    return path


@pytest.fixture(scope="module")
def tok_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("tok")
    rng = np.random.default_rng(0)
    lines = [" ".join(rng.choice(ws, rng.integers(3, 10))) + "." for ws in [EN, SI] * 150] + ["(a), b!"] * 20
    (root / "text.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return train_tokenizer([root / "text.txt"], 120, root / "tok", seed=0)


def words_of(tok, row):
    """SP words of a feature row as (text, flags)."""
    pieces = tok.convert_ids_to_tokens(row["input_ids"])
    out: dict[int, str] = {}
    for piece, w in zip(pieces, row["word_ids"], strict=True):
        if w >= 0:
            out[w] = out.get(w, "") + piece
    return [(out[w].replace("▁", ""), row["word_flags"][w]) for w in sorted(out)]


def test_glued_punctuation_keeps_the_word_flags(tok_dir, tmp_path):
    texts = ["Kamal went down the road.", "(Colombo), saw house!", ""]
    ann = write_annotations(tmp_path / "a.parquet", texts)
    build_mono_features(tok_dir, ann, "en", 64, 0.0, 0, tmp_path / "f")
    ds = load_from_disk(str(tmp_path / "f"))
    assert ds["train"].num_rows == 2 and ds["valid"].num_rows == 0  # the empty line is dropped
    tok = AutoTokenizer.from_pretrained(str(tok_dir))
    first, second = (words_of(tok, r) for r in ds["train"])
    assert first == [("Kamal", NE), ("went", VERB), ("down", 0), ("the", 0), ("road.", NOUN)]
    assert second == [("(Colombo),", NE | NOUN), ("saw", VERB), ("house!", NOUN)]
    row = ds["train"][0]
    assert row["word_ids"][0] == -1 and row["word_ids"][-1] == -1 and row["lang"] == "en"
    assert ds["train"].features["input_ids"].feature.dtype == "int32"


def test_pair_numbering_template_and_shared_truncation(tok_dir, tmp_path):
    src = [" ".join(["Kamal went to Colombo"] * 20), "Kamal saw"]
    tgt = ["ලංකා ගඟ", " ".join(["ලංකා ගඟ"] * 30)]
    a, b = write_annotations(tmp_path / "s.parquet", src), write_annotations(tmp_path / "t.parquet", tgt)
    assert main(["para", "--tokenizer", str(tok_dir), "--pair", "en-si", "--train-src", str(a), "--train-tgt",
                 str(b), "--valid-src", str(a), "--valid-tgt", str(b), "--max-length", "24",
                 "--out", str(tmp_path / "p")]) == 0  # fmt: skip
    ds = load_from_disk(str(tmp_path / "p"))["train"]
    tok = AutoTokenizer.from_pretrained(str(tok_dir))
    for row in ds:
        ids, wid = np.array(row["input_ids"]), np.array(row["word_ids"])
        assert len(ids) <= 24 and row["lang"] == "en-si"
        specials = np.flatnonzero(wid < 0)
        assert ids[specials].tolist() == [tok.cls_token_id] + [tok.sep_token_id] * 3
        assert specials[2] == specials[1] + 1
        src_w, tgt_w = wid[1 : specials[1]], wid[specials[2] + 1 : -1]
        assert len(tgt_w) >= 2 and len(src_w) >= 2  # both sides keep a share
        assert tgt_w.min() == src_w.max() + 1  # target words numbered after source words
        assert len(row["word_flags"]) == tgt_w.max() + 1
        assert all(np.diff(wid[wid >= 0]) >= 0)
    assert ds[0]["word_flags"][:2] == [NE, VERB]


def test_pair_keep_shares():
    ka, kb = pair_keep(np.array([100, 3, 100, 10]), np.array([100, 100, 3, 10]), 20)
    assert ka.tolist() == [10, 3, 17, 10] and kb.tolist() == [10, 17, 3, 10]


def test_mono_split_is_seeded(tok_dir, tmp_path):
    texts = [f"Kamal went {i}" for i in range(50)]
    ann = write_annotations(tmp_path / "a.parquet", texts)
    for name in ["x", "y"]:
        build_mono_features(tok_dir, ann, "en", 16, 0.2, 5, tmp_path / name)
    x, y = load_from_disk(str(tmp_path / "x")), load_from_disk(str(tmp_path / "y"))
    assert x["valid"].num_rows == 10 and x["train"].num_rows == 40
    assert x["valid"]["input_ids"] == y["valid"]["input_ids"]


def test_bad_annotation_names_file_and_row(tok_dir, tmp_path):
    ann = write_annotations(tmp_path / "bad.parquet", ["Kamal went", "the road"])
    table = pq.read_table(ann)
    flags = pa.array([[1, 4], [2]], type=pa.list_(pa.uint8()))
    pq.write_table(table.set_column(table.schema.get_field_index("flags"), "flags", flags), ann)
    with pytest.raises(ValueError, match=r"bad.parquet: row 1 \(sent_id 1\): `flags` has 1 entries"):
        build_mono_features(tok_dir, ann, "en", 16, 0.0, 0, tmp_path / "f")
