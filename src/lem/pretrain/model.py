"""The model a pre-training stage starts from: a new XLM-R-architecture masked LM (`lem pretrain base`), or
a saved one (`lem pretrain continue --init`)."""

from __future__ import annotations

from pathlib import Path

from lem.pretrain.settings import ModelSettings

# Imported inside functions: torch and transformers (planning, `lem plan cost` and the config check alike,
# imports lem.pretrain for its settings and needs neither)


def new_model(tokenizer, arch: ModelSettings, seed: int):
    """A randomly initialised XLM-R-architecture masked LM sized for `tokenizer` (SDPA attention)."""
    import torch
    from transformers import XLMRobertaConfig, XLMRobertaForMaskedLM

    torch.manual_seed(seed)
    config = XLMRobertaConfig(
        vocab_size=len(tokenizer),
        hidden_size=arch.hidden_size,
        num_hidden_layers=arch.num_hidden_layers,
        num_attention_heads=arch.num_attention_heads,
        intermediate_size=arch.intermediate_size,
        max_position_embeddings=arch.max_length + 2,  # XLM-R positions start after the padding index
        type_vocab_size=1,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        attn_implementation="sdpa",
    )
    return XLMRobertaForMaskedLM(config)


def load_model(path: str | Path):
    """The masked LM and tokenizer saved in the folder `path` (SDPA attention)."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(path))
    model = AutoModelForMaskedLM.from_pretrained(
        str(path), trust_remote_code=False, attn_implementation="sdpa"
    )
    return model, tokenizer
