"""Tokenize annotated text into training features carrying per-word entity flags (`lem features`).

Each example stores `input_ids`, `word_ids` (per token, -1 for special tokens) and `word_flags` (per word,
the bits of `lem.core.entities`: 1 = NE, 2 = NOUN, 4 = VERB), so the masking collator needs no strings, no
look-ups and no model calls.

Which word a token belongs to. The masking unit is the *SentencePiece word*: the tokens from one `▁`-initial
token up to the next one (a side's first token always starts a word, with or without `▁`, so a missing
marker cannot crash or merge sentences). The tokenizer splits on whitespace before adding `▁`, so an SP word
never spans a space: it covers one whitespace-separated chunk of the text, i.e. one annotation word plus any
punctuation glued to it ("road." is the annotation words "road" + "."; "(Colombo)," is "(" "Colombo" ")" ",").

Flags of an SP word = bitwise OR of the flags of every annotation word that any of its tokens overlaps
(character offsets against the annotation's spans; a token without overlap, such as a lone `▁`, adds
nothing and simply joins the SP word it sits in, i.e. the next word). Punctuation carries no flags, so
"road." keeps road's NOUN flag and "(Colombo)," keeps Colombo's NE flag. A token that straddles two
annotation words (a piece "road." in the vocabulary) ORs both. Known consequence: in one-subword masking
the chosen subword of "road." can be the "." (probability 1/number of pieces), as in the authors' grouping.

Truncation: the text sides are tokenized without special tokens and cut here, not by the tokenizer. A mono
example keeps its first `max_length - 2` tokens. A pair `<s> A </s></s> B </s>` shares `max_length - 4`
tokens: each side keeps at least min(its length, half), the longer side takes what the shorter leaves
(`pair_keep`), so the target side can never be dropped. Target words are numbered after source words.
"""

from __future__ import annotations

import argparse
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lem.core.entities import FLAG_BITS
from lem.core.files import atomic_path
from lem.core.stage import Stage, Verb, arg

# Imported inside functions: datasets and transformers (`lem features --help` needs neither)

log = logging.getLogger(__name__)


@dataclass
class Annotations:
    """Word spans and flags of an annotation Parquet, flattened (row r's words are `offsets[r]:offsets[r+1]`)."""

    path: str
    texts: list[str]
    starts: np.ndarray
    ends: np.ndarray
    flags: np.ndarray
    offsets: np.ndarray

    def __len__(self) -> int:
        return len(self.texts)

    def take(self, rows: np.ndarray) -> Annotations:
        counts = np.diff(self.offsets)[rows]
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        index = np.repeat(self.offsets[rows] - offsets[:-1], counts) + np.arange(offsets[-1])
        texts = [self.texts[r] for r in rows]
        return Annotations(self.path, texts, self.starts[index], self.ends[index], self.flags[index], offsets)


def read_annotations(path: str | os.PathLike) -> Annotations:
    """Read the columns features need from an annotation Parquet, checking that spans and flags agree."""
    table = pq.read_table(path, columns=["sent_id", "text", "starts", "ends", "flags"])
    cols = {name: table.column(name).combine_chunks() for name in ["starts", "ends", "flags"]}
    offsets = cols["starts"].offsets.to_numpy().astype(np.int64)
    sent_ids = table.column("sent_id").to_numpy()
    for name in ["ends", "flags"]:
        other = cols[name].offsets.to_numpy()
        if not np.array_equal(other, offsets):
            row = int(np.argmax(np.diff(other) != np.diff(offsets)))
            raise ValueError(
                f"{path}: row {row} (sent_id {sent_ids[row]}): `{name}` has {other[row + 1] - other[row]} entries, "
                f"expected one per word ({offsets[row + 1] - offsets[row]} as in `starts`)"
            )
    texts = table.column("text").to_pylist()
    starts = cols["starts"].values.to_numpy().astype(np.int64)
    ends = cols["ends"].values.to_numpy().astype(np.int64)
    flags = cols["flags"].values.to_numpy().astype(np.uint8)
    row_of_word = np.repeat(np.arange(len(texts)), np.diff(offsets))
    lengths = np.array([len(t) for t in texts], dtype=np.int64)
    bad = (starts >= ends) | (starts < 0) | (ends > lengths[row_of_word])
    bad[1:] |= (starts[1:] < ends[:-1]) & (row_of_word[1:] == row_of_word[:-1])
    if bad.any():
        w = int(np.argmax(bad))
        row = int(row_of_word[w])
        raise ValueError(
            f"{path}: row {row} (sent_id {sent_ids[row]}): word span [{starts[w]}, {ends[w]}) is not an ordered, "
            f"non-empty span inside the text of {lengths[row]} characters (expected lem.core.text.word_spans)"
        )
    return Annotations(str(path), texts, starts, ends, flags, offsets)


@dataclass
class Side:
    """One text side of a batch, tokenized without special tokens, as flat arrays over all examples."""

    ids: np.ndarray  # token ids, all examples concatenated
    counts: np.ndarray  # tokens per example
    word_ids: np.ndarray  # per token, SP-word index within its example
    word_flags: np.ndarray  # per SP word, flags (concatenated over examples)
    word_counts: np.ndarray  # SP words per example


def starts_of(counts: np.ndarray) -> np.ndarray:
    """Start offsets of consecutive groups of the given sizes (an exclusive cumulative sum)."""
    return np.cumsum(counts) - counts


def word_start_table(tokenizer) -> np.ndarray:
    """Per vocabulary id: does the piece start a SentencePiece word (begins with `▁`)?"""
    vocab = tokenizer.get_vocab()
    table = np.zeros(max(vocab.values()) + 1, dtype=bool)
    for piece, i in vocab.items():
        table[i] = piece.startswith("▁")
    return table


def tokenize_side(tokenizer, ann: Annotations) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Token ids, per-token flags (OR of overlapped annotation words) and token counts, flat over examples."""
    if len(ann) == 0:  # the tokenizer cannot encode an empty batch
        return np.zeros(0, np.int64), np.zeros(0, np.uint8), np.zeros(0, np.int64)
    enc = tokenizer(
        ann.texts, add_special_tokens=False, return_offsets_mapping=True, return_attention_mask=False
    )
    counts = np.array([len(x) for x in enc["input_ids"]], dtype=np.int64)
    n = int(counts.sum())
    ids = np.fromiter((i for row in enc["input_ids"] for i in row), dtype=np.int64, count=n)
    offs = np.fromiter(
        (c for row in enc["offset_mapping"] for o in row for c in o), dtype=np.int64, count=2 * n
    )
    tok_s, tok_e = offs[0::2], offs[1::2]
    ex = np.repeat(np.arange(len(counts)), counts)
    # Keys example * BIG + character position make one sorted array over the whole batch.
    big = np.int64(1 << 32)
    word_ex = np.repeat(np.arange(len(ann)), np.diff(ann.offsets))
    start_key, end_key = word_ex * big + ann.starts, word_ex * big + ann.ends
    first = np.searchsorted(
        end_key, ex * big + tok_s, side="right"
    )  # first word ending after the token start
    stop = np.searchsorted(start_key, ex * big + tok_e, side="left")  # words starting before the token end
    token_flags = np.zeros(n, dtype=np.uint8)
    for bit in FLAG_BITS:
        has = np.concatenate([[0], np.cumsum((ann.flags & bit) != 0)])
        overlaps = has[np.maximum(stop, first)] - has[first] > 0
        token_flags |= np.where(overlaps & (tok_e > tok_s), bit, 0).astype(np.uint8)
    return ids, token_flags, counts


def build_side(
    ids: np.ndarray, token_flags: np.ndarray, counts: np.ndarray, keep: np.ndarray, starts_word
) -> Side:
    """Cut each example to `keep` tokens and group tokens into SP words with OR-ed flags."""
    starts = starts_of(counts)
    pos = np.arange(len(ids)) - np.repeat(starts, counts)
    kept = pos < np.repeat(keep, counts)
    ids, token_flags, pos = ids[kept], token_flags[kept], pos[kept]
    is_start = starts_word[ids] | (pos == 0)
    word_global = np.cumsum(is_start) - 1
    word_counts = np.bincount(np.repeat(np.arange(len(keep)), keep), weights=is_start, minlength=len(keep))
    word_counts = word_counts.astype(np.int64)
    first_word = starts_of(word_counts)
    word_ids = word_global - np.repeat(first_word, keep)
    heads = np.flatnonzero(is_start)
    word_flags = np.bitwise_or.reduceat(token_flags, heads) if len(heads) else np.zeros(0, np.uint8)
    return Side(ids, keep.astype(np.int64), word_ids, word_flags.astype(np.uint8), word_counts)


def pair_keep(len_a: np.ndarray, len_b: np.ndarray, budget: int) -> tuple[np.ndarray, np.ndarray]:
    """Tokens kept per side when both must fit `budget`: each keeps min(length, half), the rest goes longer."""
    half = budget // 2
    keep_a = np.minimum(len_a, np.maximum(half, budget - len_b))
    keep_b = np.minimum(len_b, budget - keep_a)
    return keep_a, keep_b


def assemble(sides: Sequence[Side], cls_id: int, sep_id: int, lang: str) -> pa.Table:
    """Join sides as `<s> A </s>` or `<s> A </s></s> B </s>` into the features table (flat numpy, no loops)."""
    n_ex = len(sides[0].counts)
    total = sum(s.counts for s in sides) + 2 * len(sides)
    out_off = np.concatenate([[0], np.cumsum(total)]).astype(np.int64)
    ids = np.full(out_off[-1], sep_id, dtype=np.int32)
    ids[out_off[:-1]] = cls_id
    word_ids = np.full(out_off[-1], -1, dtype=np.int32)
    flag_total = sum(s.word_counts for s in sides)
    flag_off = np.concatenate([[0], np.cumsum(flag_total)]).astype(np.int64)
    flags = np.zeros(flag_off[-1], dtype=np.uint8)
    tok_base = out_off[:-1] + 1
    word_base = np.zeros(n_ex, dtype=np.int64)
    for side in sides:
        starts = starts_of(side.counts)
        pos = np.arange(len(side.ids)) - np.repeat(starts, side.counts)
        at = np.repeat(tok_base, side.counts) + pos
        ids[at] = side.ids
        word_ids[at] = side.word_ids + np.repeat(word_base, side.counts)
        wstarts = starts_of(side.word_counts)
        wpos = np.arange(len(side.word_flags)) - np.repeat(wstarts, side.word_counts)
        flags[np.repeat(flag_off[:-1] + word_base, side.word_counts) + wpos] = side.word_flags
        tok_base = tok_base + side.counts + 2
        word_base = word_base + side.word_counts
    return pa.table(
        {
            "input_ids": pa.ListArray.from_arrays(pa.array(out_off.astype(np.int32)), pa.array(ids)),
            "word_ids": pa.ListArray.from_arrays(pa.array(out_off.astype(np.int32)), pa.array(word_ids)),
            "word_flags": pa.ListArray.from_arrays(pa.array(flag_off.astype(np.int32)), pa.array(flags)),
            "lang": pa.array([lang] * n_ex, type=pa.string()),
        }
    )


def features_table(tokenizer, anns: Sequence[Annotations], max_length: int, lang: str) -> pa.Table:
    """Features of one split: one annotation (mono) or two row-aligned annotations (source, target)."""
    if len(anns) == 2 and len(anns[0]) != len(anns[1]):
        raise ValueError(
            f"{anns[0].path} has {len(anns[0])} rows but {anns[1].path} has {len(anns[1])}: "
            "expected the two sides of a parallel corpus, row for row"
        )
    budget = max_length - 2 * len(anns)
    if budget < len(anns):
        raise ValueError(
            f"max_length {max_length} leaves no room for text with {2 * len(anns)} special tokens"
        )
    starts_word = word_start_table(tokenizer)
    raw = [tokenize_side(tokenizer, ann) for ann in anns]
    counts = [c for _, _, c in raw]
    nonempty = np.logical_and.reduce([c > 0 for c in counts])
    keeps = (
        [np.minimum(counts[0], budget)] if len(anns) == 1 else list(pair_keep(counts[0], counts[1], budget))
    )
    sides = [
        build_side(i, f, c, np.where(nonempty, k, 0), starts_word)
        for (i, f, c), k in zip(raw, keeps, strict=True)
    ]
    table = assemble(sides, tokenizer.cls_token_id, tokenizer.sep_token_id, lang)
    return table.filter(pa.array(nonempty))


def to_dataset(table: pa.Table):
    from datasets import Dataset

    return Dataset(table)


def save_splits(train: pa.Table, valid: pa.Table, out: str | os.PathLike) -> None:
    from datasets import DatasetDict

    with atomic_path(out) as tmp:
        splits = DatasetDict({"train": to_dataset(train), "valid": to_dataset(valid)})
        # an empty split saved with the default 0 shards cannot be loaded back
        splits.save_to_disk(str(tmp), num_shards={k: 1 for k, d in splits.items() if d.num_rows == 0} or None)


def load_tokenizer(path: str | os.PathLike):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(path))


def mono_split(n: int, valid_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Row indices (train, valid): a seeded random `valid_fraction` of the rows, each part in file order."""
    n_valid = int(round(n * valid_fraction))
    if valid_fraction > 0 and n > 1:
        n_valid = min(max(n_valid, 1), n - 1)
    valid = np.sort(np.random.default_rng(seed).permutation(n)[:n_valid])
    train = np.setdiff1d(np.arange(n), valid)
    return train, valid


def build_mono_features(
    tokenizer: str | os.PathLike,
    annotations: str | os.PathLike,
    lang: str,
    max_length: int,
    valid_fraction: float,
    seed: int,
    out: str | os.PathLike,
) -> None:
    """`lem features mono`: tokenize one language's annotated sentences into train/valid features."""
    t0 = time.perf_counter()
    tok = load_tokenizer(tokenizer)
    ann = read_annotations(annotations)
    train_rows, valid_rows = mono_split(len(ann), valid_fraction, seed)
    train = features_table(tok, [ann.take(train_rows)], max_length, lang)
    valid = features_table(tok, [ann.take(valid_rows)], max_length, lang)
    save_splits(train, valid, out)
    dropped = len(ann) - train.num_rows - valid.num_rows
    log.info(
        "features mono %s: %d rows -> train %d, valid %d (%d empty dropped), %.1fs -> %s",
        lang, len(ann), train.num_rows, valid.num_rows, dropped, time.perf_counter() - t0, out,
    )  # fmt: skip


def build_pair_features(
    tokenizer: str | os.PathLike,
    pair: str,
    train_src: str | os.PathLike,
    train_tgt: str | os.PathLike,
    valid_src: str | os.PathLike,
    valid_tgt: str | os.PathLike,
    max_length: int,
    out: str | os.PathLike,
) -> None:
    """`lem features para`: join row-aligned source/target annotations into TLM features."""
    t0 = time.perf_counter()
    tok = load_tokenizer(tokenizer)
    tables = {}
    for split, src, tgt in [("train", train_src, train_tgt), ("valid", valid_src, valid_tgt)]:
        anns = [read_annotations(src), read_annotations(tgt)]
        tables[split] = features_table(tok, anns, max_length, pair)
        tables[split + "_in"] = len(anns[0])
    save_splits(tables["train"], tables["valid"], out)
    log.info(
        "features para %s: train %d/%d pairs, valid %d/%d pairs kept (empty side dropped), %.1fs -> %s",
        pair, tables["train"].num_rows, tables["train_in"], tables["valid"].num_rows, tables["valid_in"],
        time.perf_counter() - t0, out,
    )  # fmt: skip


def cmd_mono(a: argparse.Namespace) -> None:
    build_mono_features(a.tokenizer, a.annotations, a.lang, a.max_length, a.valid_fraction, a.seed, a.out)


def cmd_para(a: argparse.Namespace) -> None:
    build_pair_features(
        a.tokenizer, a.pair, a.train_src, a.train_tgt, a.valid_src, a.valid_tgt, a.max_length, a.out
    )


TOKENIZER, MAX_LENGTH, OUT = (
    arg("--tokenizer", required=True),
    arg("--max-length", type=int, required=True),
    arg("--out", required=True),
)
STAGE = Stage(
    "features",
    __doc__.splitlines()[0],
    (
        Verb("mono", "monolingual MLM features", cmd_mono, (
            TOKENIZER,
            arg("--annotations", required=True),
            arg("--lang", required=True),
            MAX_LENGTH,
            arg("--valid-fraction", type=float, required=True),
            arg("--seed", type=int, default=0),
            OUT,
        )),
        Verb("para", "parallel TLM features", cmd_para, (
            TOKENIZER,
            arg("--pair", required=True),
            *(arg(name, required=True) for name in ["--train-src", "--train-tgt", "--valid-src", "--valid-tgt"]),
            MAX_LENGTH,
            OUT,
        )),
    ),
)  # fmt: skip
