"""`lem stand-in build`: a random XLM-R-architecture masked LM + tokenizer that loads like a hub snapshot."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lem.stand_in import SIZES, build_stand_in, xlmr_mlm_parameters

TEXT = "the road to Colombo is long\nකොළඹ පාරේ බස් ධාවනය වේ\nகொழும்பு சாலை நீளமானது\n"


@pytest.fixture
def texts(tmp_path) -> list[Path]:
    mono = tmp_path / "mono.txt"
    mono.write_text(TEXT * 40)
    para = tmp_path / "pairs.tsv"
    lines = TEXT.splitlines()
    para.write_text(f"{lines[0]}\t{lines[1]}\n{lines[1]}\t{lines[2]}\n" * 20)
    return [mono, para]


def test_tiny_stand_in_from_the_runs_text(tmp_path, texts):
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    out = tmp_path / "resources/hf/lem-stand-in/xlm-roberta-tiny/random"
    proc = subprocess.run(
        [sys.executable, "-m", "lem.cli", "stand-in", "build", "--size", "tiny", "--texts", *map(str, texts),
         "--vocab-size", "120", "--seed", "3", "--out", str(out)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "config.json", "model.safetensors", "provenance.json", "tokenizer.json", "tokenizer_config.json"
    ]  # fmt: skip
    tok = AutoTokenizer.from_pretrained(str(out))
    model = AutoModelForMaskedLM.from_pretrained(str(out))
    assert (
        model.config.vocab_size == len(tok) <= 120
        and model.config.hidden_size == SIZES["tiny"]["hidden_size"]
    )
    assert tok.tokenize("the road") and tok.convert_tokens_to_ids("<mask>") == len(tok) - 1
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["random"] is True and prov["parameters"] == sum(p.numel() for p in model.parameters())
    assert set(prov["tokenizer"]["trained_on"]) == {str(p) for p in texts}
    assert model.config.lem_stand_in["note"].startswith("randomly initialised")
    assert not list(tmp_path.rglob("*.bin")) and not list(out.parent.glob(".random*"))  # atomic, no leftovers


def test_a_given_tokenizer_is_copied_and_base_keeps_xlmr_base_shape(tmp_path, texts, monkeypatch):
    build_stand_in(tmp_path / "tiny", "tiny", texts=texts, vocab_size=100)
    import transformers

    built = {}
    real = transformers.XLMRobertaForMaskedLM

    class Meta(real):  # base size without allocating 1.1 GB: build on the meta device, skip saving
        def __init__(self, config):
            import torch

            built["config"] = config
            with torch.device("meta"):
                super().__init__(config)

        def save_pretrained(self, path, **kw):
            Path(path, "model.safetensors").write_bytes(b"")

    monkeypatch.setattr(transformers, "XLMRobertaForMaskedLM", Meta)
    record = build_stand_in(tmp_path / "base", "base", tokenizer=tmp_path / "tiny")
    assert record["tokenizer"] == {"copied_from": str(tmp_path / "tiny")}
    assert record["parameters"] == 278_295_186 == xlmr_mlm_parameters(**SIZES["base"])
    cfg = built["config"]
    assert (cfg.vocab_size, cfg.hidden_size, cfg.num_hidden_layers, cfg.intermediate_size) == (
        250_002,
        768,
        12,
        3072,
    )
    assert cfg.pad_token_id == 1 and cfg.bos_token_id == 0 and cfg.eos_token_id == 2


def test_stand_in_needs_exactly_one_tokenizer_source(tmp_path, texts):
    with pytest.raises(ValueError, match="either a tokenizer folder or text files"):
        build_stand_in(tmp_path / "m", "tiny")
    with pytest.raises(ValueError, match="size must be one of"):
        build_stand_in(tmp_path / "m", "large", texts=texts)
    assert not (tmp_path / "m").exists()
