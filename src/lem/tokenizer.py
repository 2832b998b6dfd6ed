"""Train a SentencePiece-style Unigram tokenizer in XLM-R format (`lem tokenizer train`).

The embedded default pre-trains a tiny XLM-R from scratch, so it needs its own small vocabulary with the same
conventions as `FacebookAI/xlm-roberta-base`: SentencePiece's nmt_nfkc normalisation, the `▁` word-start marker (Metaspace,
prefix always added, so every whitespace-separated chunk starts a new SentencePiece word), special tokens
`<s>`=0 `<pad>`=1 `</s>`=2 `<unk>`=3 and `<mask>` as the last id, and the pair template
`<s> A </s></s> B </s>`. Training is deterministic: the input lines are read in a fixed order and shuffled
with `seed` before training (the Unigram trainer itself has no randomness).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from tokenizers import Tokenizer, decoders, normalizers, pre_tokenizers, processors, trainers
from tokenizers.models import Unigram

from lem.core.files import atomic_path
from lem.core.stage import Stage, Verb, arg

# Imported inside functions: sentencepiece and transformers (`lem tokenizer --help` needs neither)

log = logging.getLogger(__name__)

SPECIAL_TOKENS = ["<s>", "<pad>", "</s>", "<unk>"]
MASK_TOKEN = "<mask>"


def read_training_lines(path: str | os.PathLike) -> Iterator[str]:
    """Sentences of a `.txt` file (one per line) or of every column of a header-less `.tsv` file."""
    path = Path(path)
    if path.suffix not in {".txt", ".tsv"}:
        raise ValueError(f"{path}: expected a .txt (one sentence per line) or header-less .tsv file")
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            line = line.rstrip("\n")
            for cell in line.split("\t") if path.suffix == ".tsv" else [line]:
                if cell.strip():
                    yield cell


def nfkc_normalizer() -> normalizers.Normalizer:
    """SentencePiece's `nmt_nfkc` rule as a `Precompiled` normaliser, the one XLM-R ships.

    `XLMRobertaTokenizer.from_pretrained` rebuilds the backend and keeps only a `Precompiled` normaliser from
    tokenizer.json; a plain `NFKC()` would silently vanish on reload, so training and loading would disagree.
    """
    import sentencepiece
    from sentencepiece import sentencepiece_model_pb2

    spec = sentencepiece_model_pb2.NormalizerSpec()
    spec.ParseFromString(
        sentencepiece.SentencePieceNormalizer(rule_name="nmt_nfkc").serialized_normalizer_spec()
    )
    return normalizers.Precompiled(spec.precompiled_charsmap)


def reorder_fallback_chars(vocab: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """Give the trainer's fallback characters their scores in code-point order.

    The Unigram trainer appends every character it kept out of the vocabulary with scores
    `s_min, s_min - 1e-4, s_min - 2e-4, ...` in hash-set order, which changes from run to run and with it the
    segmentation. They are the single characters whose scores sit on that 1e-4 grid below the lowest one.
    """
    chars = [(p, s) for p, s in vocab if len(p) == 1]
    if not chars:
        return vocab
    lowest = min(s for _, s in chars)
    on_grid = {p for p, s in chars if abs((s - lowest) / 1e-4 - round((s - lowest) / 1e-4)) < 1e-3}
    scores = sorted((s for p, s in vocab if p in on_grid), reverse=True)
    reassigned = dict(zip(sorted(on_grid), scores, strict=True))
    return [(p, reassigned.get(p, s)) for p, s in vocab]


def build_backend(vocab_size: int, lines: Sequence[str]) -> Tokenizer:
    """The trained `tokenizers.Tokenizer` with XLM-R's normaliser, pre-tokenizer and templates.

    The Unigram trainer sums floats in hash-map order, so two runs differ in the last bits of the piece
    scores (and can order equal-score pieces differently); rounding the scores and sorting the pieces makes
    the saved vocabulary and its ids identical run to run.
    """
    trainee = Tokenizer(Unigram())
    trainee.normalizer = nfkc_normalizer()
    trainee.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")]
    )
    trainer = trainers.UnigramTrainer(
        vocab_size=vocab_size - 1,  # <mask> is added after training as the last id
        special_tokens=SPECIAL_TOKENS,
        unk_token="<unk>",
        show_progress=False,
    )
    trainee.train_from_iterator(lines, trainer=trainer, length=len(lines))
    trained = [(p, s) for p, s in json.loads(trainee.to_str())["model"]["vocab"] if p not in SPECIAL_TOKENS]
    pieces = sorted(
        ((p, round(s, 6)) for p, s in reorder_fallback_chars(trained)), key=lambda ps: (-ps[1], ps[0])
    )
    vocab = [(t, 0.0) for t in SPECIAL_TOKENS] + pieces
    tok = Tokenizer(Unigram(vocab=vocab, unk_id=SPECIAL_TOKENS.index("<unk>"), byte_fallback=False))
    tok.normalizer = trainee.normalizer
    tok.pre_tokenizer = trainee.pre_tokenizer
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    tok.add_special_tokens(SPECIAL_TOKENS + [MASK_TOKEN])
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>",
        pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", 0), ("</s>", 2)],
    )
    return tok


def train_tokenizer(
    inputs: Sequence[str | os.PathLike], vocab_size: int, out: str | os.PathLike, seed: int = 0
) -> Path:
    """Train on the given `.txt` / `.tsv` files and save an `AutoTokenizer`-loadable directory at `out`."""
    from transformers import XLMRobertaTokenizerFast

    t0 = time.perf_counter()
    lines = [cell for path in inputs for cell in read_training_lines(path)]
    if not lines:
        raise ValueError(f"no text in tokenizer inputs {[str(p) for p in inputs]}")
    random.Random(seed).shuffle(lines)
    backend = build_backend(vocab_size, lines)
    ids = {t: backend.token_to_id(t) for t in [*SPECIAL_TOKENS, MASK_TOKEN]}
    expected = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, MASK_TOKEN: backend.get_vocab_size() - 1}
    if ids != expected:
        raise RuntimeError(f"special token ids {ids} differ from XLM-R's {expected}")
    wrapped = XLMRobertaTokenizerFast(tokenizer_object=backend, model_max_length=512)
    with atomic_path(out) as tmp:
        wrapped.save_pretrained(str(tmp))
    log.info(
        "tokenizer: %d lines from %d files, vocab %d, %.1fs -> %s",
        len(lines), len(inputs), backend.get_vocab_size(), time.perf_counter() - t0, out,
    )  # fmt: skip
    return Path(out)


def cmd_train(a: argparse.Namespace) -> None:
    train_tokenizer(a.inputs, a.vocab_size, a.out, seed=a.seed)


STAGE = Stage(
    "tokenizer",
    __doc__.splitlines()[0],
    (
        Verb("train", "train a Unigram tokenizer in XLM-R format", cmd_train, (
            arg("--inputs", nargs="+", required=True, help=".txt or header-less .tsv files"),
            arg("--vocab-size", type=int, required=True),
            arg("--seed", type=int, default=0),
            arg("--out", required=True, help="output directory (save_pretrained)"),
        )),
    ),
)  # fmt: skip
