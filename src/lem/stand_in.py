"""A stand-in base model (`lem stand-in build`): a randomly initialised XLM-R-architecture masked LM and its
tokenizer, saved like a hub snapshot, so a paper-shaped config runs end to end with no download.

It exists to check a machine (a GPU node before the paper run; CPU in the test suite), never to produce
results: its weights are random, its `config.json` carries `lem_stand_in` and its `provenance.json`
says so. `--size base` is xlm-roberta-base's architecture, embedding matrix included (250,002 rows,
278,295,186 parameters), so memory, checkpoint sizes and step time are the paper run's; the tokenizer is
a SentencePiece model trained on the run's own text (`lem.tokenizer`) or a given one, and ids past its
vocabulary are simply never used. `--size tiny` is sized for CPU tests (embedding = the tokenizer's size).
Weights are saved as safetensors.

The small stand-ins the tests and benches build in memory come from here too, one builder each: a word-level
tokenizer of a given size with XLM-R's special tokens (`word_level_tokenizer`), feature rows drawn at random
(`random_feature_rows`) and a randomly initialised XLM-R masked LM of any size (`random_mlm`: the tests' tiny
models, the benches' xlm-roberta-base).
"""

from __future__ import annotations

import argparse
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lem.core.files import atomic_path, write_json
from lem.core.stage import Stage, UsageError, Verb, arg
from lem.data.download import sha256_file

# Imported inside functions: torch, transformers, tokenizers, numpy and lem.tokenizer (planning reads SIZES
# here and `lem stand-in --help` imports this module: neither needs them)

log = logging.getLogger("lem.stand_in")

XLMR_BASE_VOCAB = 250_002

# Architectures (XLM-R masked LM). `vocab_size` None: the tokenizer's size.
SIZES: dict[str, dict[str, Any]] = {
    "base": {  # FacebookAI/xlm-roberta-base
        "hidden_size": 768,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "intermediate_size": 3072,
        "max_position_embeddings": 514,
        "vocab_size": XLMR_BASE_VOCAB,
    },
    "tiny": {
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 64,
        "max_position_embeddings": 514,
        "vocab_size": None,
    },
}


def xlmr_mlm_parameters(
    vocab_size: int,
    hidden_size: int,
    num_hidden_layers: int,
    intermediate_size: int,
    max_position_embeddings: int,
    type_vocab_size: int = 1,
    **_: Any,
) -> int:
    """Parameters of `XLMRobertaForMaskedLM` (decoder tied to the word embeddings, no pooler)."""
    h, i = hidden_size, intermediate_size
    embeddings = (vocab_size + max_position_embeddings + type_vocab_size) * h + 2 * h
    layer = 4 * (h * h + h) + 2 * h + (h * i + i) + (i * h + h) + 2 * h
    head = (h * h + h) + 2 * h + vocab_size  # dense, layer norm, output bias
    return embeddings + num_hidden_layers * layer + head


def build_stand_in(
    out: str | Path,
    size: str = "base",
    tokenizer: str | Path | None = None,
    texts: Sequence[str | Path] = (),
    vocab_size: int = 8000,
    seed: int = 13,
) -> dict[str, Any]:
    """Write a stand-in model folder at `out` (atomically) and return its provenance record.

    The tokenizer is copied from `tokenizer` (a folder) or trained on `texts` (`.txt` / header-less `.tsv`)
    with `vocab_size` pieces at most."""
    import torch
    from transformers import AutoTokenizer, XLMRobertaConfig, XLMRobertaForMaskedLM

    from lem.tokenizer import train_tokenizer

    if size not in SIZES:
        raise ValueError(f"stand-in size must be one of {sorted(SIZES)}, got {size!r}")
    if (tokenizer is None) == (not texts):
        raise ValueError("give either a tokenizer folder or text files to train one on, not both or neither")
    started = time.monotonic()
    arch = dict(SIZES[size])
    with atomic_path(out) as tmp:
        tmp.mkdir()
        if tokenizer is not None:
            tok_source: dict[str, Any] = {"copied_from": str(tokenizer)}
            tok = AutoTokenizer.from_pretrained(str(tokenizer))
        else:
            trained = train_tokenizer(list(texts), vocab_size, tmp.parent / "tokenizer", seed=seed)
            tok = AutoTokenizer.from_pretrained(str(trained))
            tok_source = {
                "trained_on": {str(p): sha256_file(p) for p in texts},
                "vocab_size_asked": vocab_size,
                "seed": seed,
            }
        n_tok = len(tok)
        model_vocab = arch.pop("vocab_size") or n_tok
        if model_vocab < n_tok:
            raise ValueError(f"the tokenizer has {n_tok} ids, more than the {size} stand-in's {model_vocab}")
        note = {
            "size": size,
            "seed": seed,
            "tokenizer_vocab": n_tok,
            "note": "randomly initialised stand-in for a smoke test: not a trained model, its metrics mean nothing",
        }
        config = XLMRobertaConfig(
            vocab_size=model_vocab,
            type_vocab_size=1,
            pad_token_id=tok.pad_token_id,
            bos_token_id=tok.bos_token_id,
            eos_token_id=tok.eos_token_id,
            lem_stand_in=note,
            **arch,
        )
        torch.manual_seed(seed)
        model = XLMRobertaForMaskedLM(config)
        n_params = sum(p.numel() for p in model.parameters())
        expected = xlmr_mlm_parameters(model_vocab, **arch)
        if n_params != expected:
            raise RuntimeError(f"stand-in has {n_params} parameters, the architecture says {expected}")
        model.save_pretrained(str(tmp), safe_serialization=True)
        tok.save_pretrained(str(tmp))
        record = {
            "source": "lem stand-in build (random initialisation)",
            "random": True,
            **note,
            "architecture": {**arch, "vocab_size": model_vocab},
            "parameters": n_params,
            "tokenizer": tok_source,
        }
        write_json(tmp / "provenance.json", record)
    log.info(
        "stand-in %s: %d parameters, tokenizer %d ids, %.1fs -> %s",
        size,
        n_params,
        n_tok,
        time.monotonic() - started,
        out,
    )
    return record


# --- small stand-ins for tests and benches: one builder each ---------------------------------------------

XLMR_SPECIALS = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}  # and <mask>, the last id


def xlmr_fast_tokenizer(tokenizer_object):
    """A `tokenizers.Tokenizer` wrapped as a transformers fast tokenizer with XLM-R's special tokens."""
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer_object, bos_token="<s>", eos_token="</s>", unk_token="<unk>", pad_token="<pad>",
        mask_token="<mask>", cls_token="<s>", sep_token="</s>",
    )  # fmt: skip


def xlmr_template(tok) -> None:
    """XLM-R's `<s> A </s>` and `<s> A </s> </s> B </s>` templates on a `tokenizers.Tokenizer`."""
    from tokenizers import processors

    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>", special_tokens=[("<s>", 0), ("</s>", 2)]
    )


def unigram_tokenizer(texts: Sequence[str], vocab_size: int):
    """A fast Unigram tokenizer trained on `texts` with XLM-R's special tokens (`<mask>` the last id) and
    templates: for stages that segment real text (annotation, embedding) in tests and benches."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    tok.train_from_iterator(
        texts,
        trainers.UnigramTrainer(vocab_size=vocab_size, special_tokens=list(XLMR_SPECIALS), unk_token="<unk>"),
    )
    tok.add_special_tokens(["<mask>"])
    xlmr_template(tok)
    return xlmr_fast_tokenizer(tok)


def save_tiny_xlmr(out, texts: Sequence[str], *, vocab_size: int = 60, hidden: int = 32, layers: int = 1,
                   heads: int = 2, intermediate: int | None = None, positions: int = 64) -> None:  # fmt: skip
    """A random tiny XLM-R masked LM and its Unigram tokenizer (`unigram_tokenizer`) saved to `out`."""
    from transformers import XLMRobertaConfig, XLMRobertaForMaskedLM

    fast = unigram_tokenizer(texts, vocab_size)
    fast.save_pretrained(out)
    cfg = XLMRobertaConfig(
        vocab_size=len(fast), hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
        intermediate_size=intermediate or hidden * 2, max_position_embeddings=positions, pad_token_id=1,
        bos_token_id=0, eos_token_id=2,
    )  # fmt: skip
    XLMRobertaForMaskedLM(cfg).save_pretrained(out)


def word_level_tokenizer(vocab_size: int):
    """A fast tokenizer of `vocab_size` ids with XLM-R's special tokens (`XLMR_SPECIALS`, `<mask>` the last
    id) and the words `t4`, `t5`, ...: for feature rows whose ids are drawn directly (`random_feature_rows`),
    where masking and collation need a tokenizer's special ids and size, not its segmentation."""
    from tokenizers import Tokenizer, models

    vocab = {**XLMR_SPECIALS, **{f"t{i}": i for i in range(4, vocab_size - 1)}, "<mask>": vocab_size - 1}
    return xlmr_fast_tokenizer(Tokenizer(models.WordLevel(vocab, unk_token="<unk>")))


def random_feature_rows(n: int, lo: int, hi: int, seed: int, vocab_size: int,
                        flag_p: Sequence[float] = (0.5, 0.2, 0.2, 0.1), lang: str = "en") -> list[dict]:  # fmt: skip
    """`n` rows as `lem features` writes them, drawn with `seed`: lo..hi ids (`<s>`, ids of 4..vocab_size-2,
    `</s>`), word ids (1-3 subwords per word), entity flags per word (0, 1, 2, 4 with probabilities `flag_p`)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        length = int(rng.integers(lo, hi + 1))
        word_ids = np.repeat(np.arange(length), rng.integers(1, 4, size=length))[: length - 2]
        flags = rng.choice([0, 1, 2, 4], size=int(word_ids[-1]) + 1, p=list(flag_p))
        rows.append({"input_ids": [0, *rng.integers(4, vocab_size - 1, size=length - 2).tolist(), 2],
                     "word_ids": [-1, *word_ids.tolist(), -1], "word_flags": flags.tolist(), "lang": lang})  # fmt: skip
    return rows


def random_mlm(vocab_size: int, *, seed: int = 0, dropout: float | None = None, hidden_size: int = 32,
               num_hidden_layers: int = 2, num_attention_heads: int = 2, intermediate_size: int = 64,
               max_position_embeddings: int = 66, pad_token_id: int = 1, bos_token_id: int = 0,
               eos_token_id: int = 2):  # fmt: skip
    """A randomly initialised XLM-R-architecture masked LM (SDPA attention) drawn with `seed`; `dropout`
    (hidden and attention) when given, the architecture's default otherwise. The defaults are a tiny model."""
    import torch
    from transformers import XLMRobertaConfig, XLMRobertaForMaskedLM

    extra = (
        {} if dropout is None else {"hidden_dropout_prob": dropout, "attention_probs_dropout_prob": dropout}
    )
    torch.manual_seed(seed)
    return XLMRobertaForMaskedLM(XLMRobertaConfig(
        vocab_size=vocab_size, hidden_size=hidden_size, num_hidden_layers=num_hidden_layers,
        num_attention_heads=num_attention_heads, intermediate_size=intermediate_size,
        max_position_embeddings=max_position_embeddings, type_vocab_size=1, pad_token_id=pad_token_id,
        bos_token_id=bos_token_id, eos_token_id=eos_token_id, attn_implementation="sdpa", **extra,
    ))  # fmt: skip


def cmd_build(a: argparse.Namespace) -> None:
    if (a.tokenizer is None) == (a.texts is None):
        raise UsageError("give --tokenizer (a folder to copy) or --texts (files to train one on), not both")
    build_stand_in(a.out, a.size, a.tokenizer, a.texts or (), a.vocab_size, a.seed)


STAGE = Stage(
    "stand-in",
    __doc__.splitlines()[0],
    (
        Verb("build", "a random model of a real architecture with a copied or trained tokenizer", cmd_build, (
            arg("--size", default="base", choices=sorted(SIZES), help="base: xlm-roberta-base's architecture"),
            arg("--tokenizer", default=None, help="a tokenizer folder to copy (or --texts)"),
            arg("--texts", nargs="+", default=None, help=".txt / header-less .tsv files to train one on"),
            arg("--vocab-size", type=int, default=8000, help="pieces of a trained tokenizer (at most)"),
            arg("--seed", type=int, default=13),
            arg("--out", required=True, help="the model folder (e.g. the config's base_model_dir)"),
        )),
    ),
)  # fmt: skip
