"""NMT for the parallel data curation task: train on the top-ranked share of a curated corpus, translate a
held-out test set, score BLEU and chrF with sacrebleu, and compare variants with sacrebleu's paired bootstrap.

Two backends, one recipe for every variant and kept share:
- `scratch` (the embedded default): a joint SentencePiece-style Unigram tokenizer trained on the training
  pairs (`lem.tokenizer`, XLM-R conventions) and a small Transformer encoder-decoder (`MarianMTModel`,
  sinusoidal positions, shared embeddings) from random weights seeded by `seed`; on the CPU in minutes.
- `pretrained` (the paper config): fine-tuning a multilingual seq2seq model with language codes
  (NLLB-200 `eng_Latn`/`sin_Sinh`/`tam_Taml`, or mBART-50 `en_XX`/`si_LK`/`ta_IN`), from a local folder or
  from the hub at a pinned commit (`revision`: 40 hex digits; a branch such as `main` only with
  `allow_unpinned`), `trust_remote_code` off unless the config says so.

Both train with the project's Trainer (`lem.training.make_trainer`: device, precision, threads and seeds
from `lem.training`), pick the checkpoint with the lowest validation loss (label-smoothed, as trained) among
the evaluations of `lem.training.training_schedule`, and save safetensors with `lem.training.save_model_dir`
plus `nmt.json` (backend, languages, language codes) and `train_log.jsonl` (the Trainer's loss log).

Files:
- the ranking `lem curate rank` writes (`rank<TAB>index<TAB>score<TAB>label`, best first, `index` the 0-based row
  of the noisy corpus) and the corpus give the training pairs: `select_top` writes the top share
  (`src<TAB>tgt[<TAB>label]` with a header, in rank order); `control_ranking` writes a random or a
  clean-first (oracle) ranking in the same format, the two reference points of the curation table;
- training, validation and test pairs: `src<TAB>tgt` TSV (a header `src<TAB>tgt[<TAB>label]` optional), or
  for the test set two line-aligned files (FLoRes-200: `devtest/sin_Sinh.devtest`; `flores_files`);
- a run (`run_nmt`) writes one folder, atomically: `model/`, `hypotheses.txt`, `references.txt`,
  `metrics.json` (BLEU, chrF, their sacrebleu signatures, counts, settings, `keys`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import re
import shutil
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lem.files import atomic_path, read_json, with_keys, write_json, write_text
from lem.inputs import InputError, long_line_message, read_lines, shown, too_long
from lem.settings import SettingsError
from lem.stage import UsageError
from lem.training import TrainingSettings

log = logging.getLogger("lem.nmt")

BACKENDS = ("scratch", "pretrained")
SELECTIONS = ("best", "last")  # the checkpoint kept: lowest validation loss, or the last step
LANGS = ("en", "si", "ta")
NLLB_CODES = {"en": "eng_Latn", "si": "sin_Sinh", "ta": "tam_Taml"}
MBART50_CODES = {"en": "en_XX", "si": "si_LK", "ta": "ta_IN"}
FLORES_CODES = NLLB_CODES  # FLoRes-200 names its files by the NLLB codes: devtest/sin_Sinh.devtest
PAIR_HEADERS = (["src", "tgt"], ["src", "tgt", "label"])
RANKING_HEADER = ["rank", "index", "score", "label"]
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
COMMIT = re.compile(r"^[0-9a-f]{40}$")
NMT_JSON = "nmt.json"

Pair = tuple[str, str]


# --- settings -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NMTSettings(TrainingSettings):
    """Every NMT choice. Scratch-model keys apply to `backend: scratch` only; `model`, `revision`,
    `allow_unpinned`, `trust_remote_code` and `lang_codes` to `backend: pretrained` only; the training
    recipe, decoding and metric keys to both. epochs, batch_size, learning_rate, weight_decay and precision
    are `lem.training.TrainingSettings`', with NMT's defaults."""

    SECTION = "nmt settings"
    # the key order of metrics.json's and nmt.json's `settings` (as written before the shared base)
    KEY_ORDER = (
        "backend", "vocab_size", "layers", "hidden", "heads", "ffn", "dropout", "model", "revision",
        "allow_unpinned", "trust_remote_code", "lang_codes", "reverse", "max_length", "epochs", "max_steps",
        "batch_size", "eval_batch_size", "learning_rate", "warmup", "weight_decay", "label_smoothing", "select",
        "evaluations", "seed", "beam_size", "bleu_tokenize", "chrf_word_order", "bootstrap_samples",
        "bootstrap_seed", "device", "precision", "threads",
    )  # fmt: skip

    backend: str = "scratch"
    # the scratch model (a Marian-architecture Transformer; `layers` in the encoder and in the decoder)
    vocab_size: int = 2000
    layers: int = 2
    hidden: int = 128
    heads: int = 4
    ffn: int = 512
    dropout: float = 0.1
    # the pretrained model
    model: str | None = None  # a local folder, or a hub id (then `revision` is a commit hash)
    revision: str | None = None
    allow_unpinned: bool = False
    trust_remote_code: bool = False
    lang_codes: dict[str, str] = field(default_factory=lambda: dict(NLLB_CODES))
    # the direction: the pair's src -> tgt, or tgt -> src
    reverse: bool = False
    # the training recipe (batch_size 32, weight_decay 0.0 and precision auto: TrainingSettings' defaults)
    max_length: int = 64  # subwords per side (source and target each); also the longest translation
    epochs: float = 30.0  # used when max_steps is -1
    max_steps: int = 1000  # > 0: this many optimizer steps, whatever the kept share (the same compute)
    eval_batch_size: int = 64
    learning_rate: float = 2e-3
    warmup: float = 0.1  # steps, or a share of them when below 1
    label_smoothing: float = 0.1
    select: str = "best"  # best: the lowest validation loss among the scheduled evaluations; last
    evaluations: int = 10  # validation evaluations, evenly spaced, the last step included
    seed: int = 13
    # decoding
    beam_size: int = 4
    # metrics
    bleu_tokenize: str = "13a"  # sacrebleu's BLEU tokenizer (flores200: spBLEU, downloads its model once)
    chrf_word_order: int = 0  # 0: chrF; 2: chrF++
    bootstrap_samples: int = 1000
    bootstrap_seed: int = 12345  # sacrebleu's default; 0 is refused (sacrebleu reads it as unseeded)
    # hardware (lem.training)
    device: str = "auto"
    threads: int | None = None

    def validate(self) -> None:
        super().validate()
        bad = self.refused

        def at_least(key: str, low: float, high: float | None = None) -> None:
            v = getattr(self, key)
            if v < low or (high is not None and v >= high):
                raise bad(key, f"a number >= {low}" + (f" and < {high}" if high is not None else ""))

        if self.backend not in BACKENDS:
            raise bad("backend", f"one of {BACKENDS}")
        if self.vocab_size < 16:
            raise bad("vocab_size", "an integer >= 16")
        for key in ("layers", "hidden", "heads", "ffn", "max_length", "eval_batch_size", "beam_size",
                    "evaluations", "bootstrap_samples", "bootstrap_seed"):  # fmt: skip
            if getattr(self, key) < 1:
                raise bad(key, "an integer >= 1")
        if self.max_steps < 1 and self.max_steps != -1:
            raise bad("max_steps", "an integer (> 0: a number of steps; -1: use epochs)")
        if self.seed < 0:
            raise bad("seed", "an integer >= 0")
        if self.hidden % self.heads:
            raise bad("hidden", f"a multiple of heads={self.heads}")
        at_least("dropout", 0.0, 1.0)
        at_least("label_smoothing", 0.0, 1.0)
        at_least("warmup", 0.0)
        if self.chrf_word_order not in (0, 1, 2):
            raise bad("chrf_word_order", "0 (chrF), 1 or 2 (chrF++)")
        from sacrebleu.metrics import BLEU

        if self.bleu_tokenize not in BLEU.TOKENIZERS:
            raise bad("bleu_tokenize", f"one of sacrebleu's tokenizers {sorted(BLEU.TOKENIZERS)}")
        if self.select not in SELECTIONS:
            raise bad("select", f"one of {SELECTIONS}")
        if not re.match(r"^(auto|cpu|cuda(:\d+)?|mps)$", self.device):
            raise bad("device", "auto, cpu, cuda or cuda:N")
        if self.threads is not None and self.threads < 1:
            raise bad("threads", "null or an integer >= 1")
        if not all(v for v in self.lang_codes.values()):
            raise bad("lang_codes", "a mapping of language (en, si, ta) to the model's language code")
        if self.backend == "pretrained":
            if not self.model:
                raise bad("model", "a local model folder or a hub id (backend: pretrained)")
            if is_hub_id(self.model) and not self.allow_unpinned and not COMMIT.match(self.revision or ""):
                raise bad(
                    "revision",
                    f"a commit hash (40 hex digits) pinning hub model {self.model!r} (or allow_unpinned: true)",
                )

    def direction(self, pair: str) -> tuple[str, str]:
        """(source, target) languages of a run on `pair` (`si-en`: si -> en; reversed: en -> si)."""
        parts = pair.split("-") if isinstance(pair, str) else []
        if len(parts) != 2 or not all(parts) or parts[0] == parts[1]:
            raise UsageError(f"nmt: pair {pair!r}: expected '<src>-<tgt>', e.g. si-en")
        src, tgt = parts
        return (tgt, src) if self.reverse else (src, tgt)

    def code(self, lang: str) -> str:
        try:
            return self.lang_codes[lang]
        except KeyError:
            raise SettingsError(
                f"nmt setting lang_codes has no code for language {lang!r} (got {dict(self.lang_codes)})"
            ) from None


def is_hub_id(model: str) -> bool:
    """`owner/name` that is not an existing folder: a hub model, which must be pinned."""
    return bool(HUB_ID.match(model)) and not Path(model).is_dir()


# --- reading pairs ------------------------------------------------------------------------------------------


def read_pairs(path: str | os.PathLike, *, drop_empty: bool = True) -> list[Pair]:
    """Pairs of a `src<TAB>tgt` TSV, with or without a header `src<TAB>tgt[<TAB>label]` (a label column is
    read past). A pair with an empty side is dropped (`drop_empty`, training data) or refused (test sets).
    Malformed lines fail naming the file and the line (`lem.inputs.InputError`)."""
    lines = read_lines(path)
    if not lines:
        raise InputError(f"{path}: expected src<TAB>tgt rows, got an empty file")
    first = lines[0].split("\t")
    header = first if first in PAIR_HEADERS else None
    width = len(header) if header else 2
    pairs: list[Pair] = []
    dropped = 0
    for lineno, line in enumerate(lines[1 if header else 0 :], start=2 if header else 1):
        if too_long(line):
            raise InputError(long_line_message(path, lineno, line))
        row = line.split("\t")
        if len(row) != width:
            expected = f"{width} tab-separated fields" + (" as in the header" if header else " (src, tgt)")
            raise InputError(f"{path}:{lineno}: expected {expected}, got {len(row)}: {shown(line)}")
        src, tgt = row[0].strip(), row[1].strip()
        if not src or not tgt:
            if drop_empty:
                dropped += 1
                continue
            raise InputError(f"{path}:{lineno}: expected a sentence on both sides, got {shown(line)}")
        pairs.append((src, tgt))
    if not pairs:
        raise InputError(f"{path}: expected src<TAB>tgt rows with text on both sides, got none")
    if dropped:
        log.info("%s: dropped %d pairs with an empty side, kept %d", path, dropped, len(pairs))
    return pairs


def read_parallel_lines(src_path: str | os.PathLike, tgt_path: str | os.PathLike) -> list[Pair]:
    """Pairs of two line-aligned files, one sentence per line (FLoRes-200 `devtest/<code>.devtest`)."""
    sides = []
    for path in (src_path, tgt_path):
        lines = read_lines(path)
        for lineno, line in enumerate(lines, start=1):
            if too_long(line):
                raise InputError(long_line_message(path, lineno, line))
            if not line.strip():
                raise InputError(f"{path}:{lineno}: expected a sentence, got an empty line")
        if not lines:
            raise InputError(f"{path}: expected one sentence per line, got an empty file")
        sides.append([line.strip() for line in lines])
    if len(sides[0]) != len(sides[1]):
        raise InputError(
            f"{src_path}: {len(sides[0])} lines, {tgt_path}: {len(sides[1])} lines: expected line-aligned files"
        )
    return list(zip(sides[0], sides[1], strict=True))


def flores_files(flores_dir: str | os.PathLike, src: str, tgt: str, split: str = "devtest",
                 codes: Mapping[str, str] = FLORES_CODES) -> tuple[Path, Path]:  # fmt: skip
    """The FLoRes-200 files of languages `src` and `tgt` (en, si, ta): `<dir>/<split>/<code>.<split>`."""
    root = Path(flores_dir)
    return tuple(root / split / f"{codes[lang]}.{split}" for lang in (src, tgt))  # type: ignore[return-value]


def read_test_set(test: str | os.PathLike | Sequence[str | os.PathLike]) -> list[Pair]:
    """A test set: a `src<TAB>tgt` TSV path, or a (source file, target file) pair of line-aligned files."""
    if isinstance(test, (str, os.PathLike)):
        return read_pairs(test, drop_empty=False)
    if len(test) != 2:
        raise UsageError(f"nmt: test set {test!r}: expected a TSV path or two line-aligned files")
    return read_parallel_lines(test[0], test[1])


def flip(pairs: Sequence[Pair]) -> list[Pair]:
    return [(b, a) for a, b in pairs]


# --- the training pairs from a curation ranking -------------------------------------------------------------


def read_ranking(path: str | os.PathLike) -> list[int]:
    """Corpus row indices, best first, of a ranking file (`rank<TAB>index<TAB>score<TAB>label`)."""
    lines = read_lines(path)
    if not lines or lines[0].split("\t") != RANKING_HEADER:
        got = "an empty file" if not lines else shown(lines[0])
        raise InputError(f"{path}:1: expected the header {'<TAB>'.join(RANKING_HEADER)}, got {got}")
    order: list[int] = []
    for lineno, line in enumerate(lines[1:], start=2):
        row = line.split("\t")
        if len(row) != 4 or not row[0].isdigit() or not row[1].isdigit() or int(row[0]) != lineno - 1:
            raise InputError(
                f"{path}:{lineno}: expected rank {lineno - 1}<TAB>index<TAB>score<TAB>label, got {shown(line)}"
            )
        order.append(int(row[1]))
    if not order:
        raise InputError(f"{path}: expected ranked rows after the header, got none")
    if len(set(order)) != len(order):
        raise InputError(f"{path}: expected each corpus index once, got repeated indices")
    return order


def kept_count(n: int, share: float | None = None, count: int | None = None) -> int:
    """Pairs kept of `n`: `max(1, round(share * n))` (also the top share of `lem.curation.ranking_metrics` and
    of the report's curation test), or `count`."""
    if (share is None) == (count is None):
        raise UsageError("nmt: give exactly one of share and count")
    if share is not None:
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share <= 1:
            raise UsageError(f"nmt: share={share!r}: expected a number in (0, 1]")
        return max(1, int(round(share * n)))
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise UsageError(f"nmt: count={count!r}: expected an integer >= 1")
    return min(count, n)


def select_top(ranked_tsv: str | os.PathLike, corpus_tsv: str | os.PathLike, out: str | os.PathLike, *,
               share: float | None = None, count: int | None = None) -> dict[str, Any]:  # fmt: skip
    """Write the top `share` (or `count`) pairs of `corpus_tsv` in the order of `ranked_tsv` (what
    `lem curate rank --out-scores` writes) to `out` as `src<TAB>tgt[<TAB>label]` with a header, atomically.
    Returns counts (and the clean share of the kept pairs when the corpus has labels)."""
    from lem.data.noisy import read_noisy

    src, tgt, labels = read_noisy(corpus_tsv)
    order = read_ranking(ranked_tsv)
    if len(order) != len(src) or max(order) >= len(src):
        raise InputError(
            f"{ranked_tsv}: ranks {len(order)} rows (largest index {max(order)}) but {corpus_tsv} has "
            f"{len(src)} pairs: expected a ranking of this corpus"
        )
    n = kept_count(len(order), share, count)
    top = order[:n]
    header = ["src", "tgt"] + (["label"] if labels is not None else [])
    rows = ["\t".join(header)] + [
        "\t".join([src[i], tgt[i]] + ([labels[i]] if labels is not None else [])) for i in top
    ]
    write_text(out, "\n".join(rows) + "\n")
    result: dict[str, Any] = {"n_corpus": len(src), "n_kept": n, "share": n / len(src)}
    if labels is not None:
        result["clean_share_kept"] = sum(labels[i] == "clean" for i in top) / n
    log.info("select_top: %d of %d pairs of %s -> %s", n, len(src), corpus_tsv, out)
    return result


def control_ranking(corpus_tsv: str | os.PathLike, out: str | os.PathLike, kind: str = "random",
                    seed: int = 0) -> None:  # fmt: skip
    """A ranking file in `lem curate rank`'s format that no model made: `random` (a seeded shuffle: the floor of
    the curation table) or `oracle` (clean pairs first, each group shuffled: the ceiling; needs labels)."""
    from lem.data.noisy import read_noisy

    src, _, labels = read_noisy(corpus_tsv)
    rng = random.Random(f"{seed}/{kind}")
    order = list(range(len(src)))
    rng.shuffle(order)
    if kind == "oracle":
        if labels is None:
            raise InputError(f"{corpus_tsv}: an oracle ranking needs the label column")
        order.sort(key=lambda i: labels[i] != "clean")  # stable: the shuffle within each group stays
    elif kind != "random":
        raise UsageError(f"nmt: control ranking kind {kind!r}: expected random or oracle")
    rows = ["\t".join(RANKING_HEADER)] + [
        f"{r}\t{i}\t{float(len(order) - r):.6f}\t{labels[i] if labels else ''}"
        for r, i in enumerate(order, start=1)
    ]
    write_text(out, "\n".join(rows) + "\n")


# --- training -----------------------------------------------------------------------------------------------


class Seq2SeqCollator:
    """Pads a batch of `input_ids` / `labels` rows and builds the decoder inputs: the labels shifted right
    behind `decoder_start` (the model's `decoder_start_token_id`; for mBART, whose own shift wraps the final
    `</s>` to the front, the same thing as its start token is `</s>`)."""

    def __init__(self, pad_id: int, decoder_start_id: int):
        self.pad_id = int(pad_id)
        self.start_id = int(decoder_start_id)

    def __call__(self, rows: list[dict]) -> dict:
        import torch

        def pad(key: str, value: int) -> torch.Tensor:
            width = max(len(r[key]) for r in rows)
            return torch.tensor(
                [list(r[key]) + [value] * (width - len(r[key])) for r in rows], dtype=torch.long
            )

        input_ids = pad("input_ids", self.pad_id)
        labels = pad("labels", -100)
        decoder = torch.full_like(labels, self.pad_id)
        decoder[:, 0] = self.start_id
        decoder[:, 1:] = labels[:, :-1]
        decoder[decoder == -100] = self.pad_id
        return {
            "input_ids": input_ids,
            "attention_mask": (input_ids != self.pad_id).long(),
            "decoder_input_ids": decoder,
            "labels": labels,
        }


def _encode_scratch(tokenizer, pairs: Sequence[Pair], max_length: int) -> list[dict]:
    src = tokenizer([a for a, _ in pairs], truncation=True, max_length=max_length)["input_ids"]
    tgt = tokenizer(
        [b for _, b in pairs], add_special_tokens=False, truncation=True, max_length=max_length - 1
    )
    eos = tokenizer.eos_token_id
    return [{"input_ids": s, "labels": t + [eos]} for s, t in zip(src, tgt["input_ids"], strict=True)]


def _encode_pretrained(tokenizer, pairs: Sequence[Pair], max_length: int, src_code: str, tgt_code: str):
    tokenizer.src_lang = src_code
    tokenizer.tgt_lang = tgt_code
    enc = tokenizer(
        [a for a, _ in pairs], text_target=[b for _, b in pairs], truncation=True, max_length=max_length
    )
    return [{"input_ids": s, "labels": t} for s, t in zip(enc["input_ids"], enc["labels"], strict=True)]


def _fit(model, tokenizer, train_rows: list[dict], valid_rows: list[dict], s: NMTSettings, work: Path):
    """Train `model` in place with the project's Trainer; returns (trainer, training arguments, summary)."""
    from lem.training import (
        CheckpointPolicy,
        make_trainer,
        scheduled_evaluation_callback,
        training_arguments,
        training_schedule,
    )

    # a huge interval, shrunk by training_schedule to steps // evaluations: `evaluations` evenly spaced
    # evaluations (and checkpoints, the best and the last kept), the last step included
    schedule = training_schedule(
        len(train_rows), epochs=s.epochs, batch_size=s.batch_size, max_steps=s.max_steps,
        checkpoint_every=10**9, min_evaluations=s.evaluations,
    )  # fmt: skip
    callbacks = []
    if s.select == "best" and valid_rows:
        policy = CheckpointPolicy("steps", every=schedule.eval_every, metric="eval_loss", resumable=False)
        callbacks.append(scheduled_evaluation_callback(schedule))
    else:
        policy = CheckpointPolicy.final()
    args = training_arguments(
        work, policy=policy, seed=s.seed, data_seed=s.seed, batch_size=s.batch_size,
        eval_batch_size=s.eval_batch_size, learning_rate=s.learning_rate,
        logging_steps=max(1, schedule.steps // 20), epochs=s.epochs, max_steps=s.max_steps,
        weight_decay=s.weight_decay, warmup=s.warmup, precision=s.precision, device=s.device,
        remove_unused_columns=False,
    )  # fmt: skip
    # not a training_arguments() parameter: the Trainer reads it when it is built (label-smoothed loss)
    args.label_smoothing_factor = float(s.label_smoothing)
    start = model.config.decoder_start_token_id
    trainer = make_trainer(
        model=model, args=args, train_dataset=train_rows, eval_dataset=valid_rows or None,
        data_collator=Seq2SeqCollator(tokenizer.pad_token_id, start), tokenizer=tokenizer,
        callbacks=callbacks, rng_neutral_eval=True,
    )  # fmt: skip
    t0 = time.perf_counter()
    out = trainer.train()
    history = list(trainer.state.log_history)
    evals = [h["eval_loss"] for h in history if "eval_loss" in h]
    if policy.strategy != "no":
        # the model the Trainer ended with must be the best checkpoint (tied embeddings are saved once)
        final = trainer.evaluate()["eval_loss"]
        if abs(final - min(evals)) > 1e-4 * max(1.0, abs(final)):
            raise RuntimeError(
                f"nmt: the reloaded best checkpoint has validation loss {final}, not {min(evals)}"
            )
    summary = {
        "steps": int(trainer.state.global_step),
        "train_loss": float(out.training_loss),
        "eval_losses": [float(v) for v in evals],
        "best_eval_loss": min(evals) if evals else None,
        "best_checkpoint": trainer.state.best_model_checkpoint
        and Path(trainer.state.best_model_checkpoint).name,
        "n_train": len(train_rows),
        "n_valid": len(valid_rows),
    }
    log.info(
        "nmt: %d steps on %d pairs in %.1fs, train loss %.3f, validation losses %s",
        summary["steps"], len(train_rows), time.perf_counter() - t0, summary["train_loss"], [round(v, 4) for v in evals],
    )  # fmt: skip
    return trainer, args, summary


def _save(directory: Path, trainer, tokenizer, args, meta: dict[str, Any]) -> None:
    from lem.training import save_model_dir, write_json_lines

    save_model_dir(directory, trainer.model, tokenizer, args)
    write_json_lines(directory / "train_log.jsonl", trainer.state.log_history)
    write_json(directory / NMT_JSON, meta)


def _prepare(s: NMTSettings, train_pairs: Sequence[Pair]) -> None:
    from lem.training import seed_everything, set_threads

    s.validate()
    if not train_pairs:
        raise InputError("nmt: no training pairs")
    set_threads(s.threads)
    seed_everything(s.seed)


def train_scratch(train_pairs: Sequence[Pair], valid_pairs: Sequence[Pair], settings: NMTSettings,
                  out_dir: str | os.PathLike, *, src_lang: str | None = None,
                  tgt_lang: str | None = None) -> dict[str, Any]:  # fmt: skip
    """Train a joint tokenizer and a small Transformer on `train_pairs` (source, target), choose the
    checkpoint by `valid_pairs`, and save it to `out_dir` (atomically). Returns the training summary."""
    from transformers import AutoTokenizer, GenerationConfig, MarianConfig, MarianMTModel

    from lem.tokenizer import train_tokenizer
    from lem.training import seed_everything

    s = settings
    _prepare(s, train_pairs)
    with atomic_path(out_dir) as tmp:
        work = tmp.parent / "work"
        work.mkdir()
        text = work / "tokenizer_input.txt"
        text.write_text("".join(f"{a}\n{b}\n" for a, b in train_pairs), encoding="utf-8")
        train_tokenizer([text], s.vocab_size, work / "tokenizer", seed=s.seed)
        tokenizer = AutoTokenizer.from_pretrained(str(work / "tokenizer"))
        ids = {"pad": tokenizer.pad_token_id, "bos": tokenizer.bos_token_id, "eos": tokenizer.eos_token_id}
        config = MarianConfig(
            vocab_size=len(tokenizer), d_model=s.hidden, encoder_layers=s.layers, decoder_layers=s.layers,
            encoder_attention_heads=s.heads, decoder_attention_heads=s.heads, encoder_ffn_dim=s.ffn,
            decoder_ffn_dim=s.ffn, dropout=s.dropout, attention_dropout=s.dropout, activation_function="relu",
            max_position_embeddings=s.max_length + 2, scale_embedding=True, pad_token_id=ids["pad"],
            bos_token_id=ids["bos"], eos_token_id=ids["eos"], decoder_start_token_id=ids["bos"],
            forced_eos_token_id=None, share_encoder_decoder_embeddings=True, tie_word_embeddings=True,
        )  # fmt: skip
        seed_everything(s.seed)  # the random initial weights
        model = MarianMTModel(config)
        trainer, args, summary = _fit(
            model, tokenizer, _encode_scratch(tokenizer, train_pairs, s.max_length),
            _encode_scratch(tokenizer, valid_pairs, s.max_length), s, work / "trainer",
        )  # fmt: skip
        trainer.model.generation_config = GenerationConfig(
            decoder_start_token_id=ids["bos"], bos_token_id=ids["bos"], eos_token_id=ids["eos"],
            pad_token_id=ids["pad"], num_beams=s.beam_size,
        )  # fmt: skip
        summary["parameters"] = sum(p.numel() for p in trainer.model.parameters())
        meta = {"backend": "scratch", "src_lang": src_lang, "tgt_lang": tgt_lang, "forced_bos": None,
                "src_code": None, "settings": s.to_dict(), "training": summary}  # fmt: skip
        _save(tmp, trainer, tokenizer, args, meta)
    return summary


def _pretrained_source(s: NMTSettings) -> tuple[str, str | None]:
    """(local folder or hub id, revision); a hub id needs a pinned commit unless `allow_unpinned`."""
    model = str(s.model)
    if Path(model).is_dir():
        return model, None
    if not HUB_ID.match(model):
        raise FileNotFoundError(
            f"nmt setting model={model!r}: no such model folder (nor an owner/name hub id)"
        )
    if not s.allow_unpinned and not COMMIT.match(s.revision or ""):
        raise SettingsError(
            f"nmt setting revision={s.revision!r}: hub model {model!r} needs a commit hash (40 hex digits), "
            "or allow_unpinned: true"
        )
    return model, s.revision


def _lang_token_id(tokenizer, code: str, key: str) -> int:
    token_id = tokenizer.convert_tokens_to_ids(code)
    if token_id is None or token_id == tokenizer.unk_token_id:
        raise SettingsError(f"nmt setting {key}={code!r}: not a token of the model's tokenizer (language codes "
                            "are eng_Latn/sin_Sinh/tam_Taml for NLLB-200, en_XX/si_LK/ta_IN for mBART-50)")  # fmt: skip
    return int(token_id)


def finetune_pretrained(train_pairs: Sequence[Pair], valid_pairs: Sequence[Pair], settings: NMTSettings,
                        out_dir: str | os.PathLike, *, src_lang: str, tgt_lang: str) -> dict[str, Any]:  # fmt: skip
    """Fine-tune a multilingual seq2seq model (`settings.model`, NLLB-200 / mBART-50 style: the tokenizer
    takes `src_lang` / `tgt_lang` codes, generation forces the target code first) on `train_pairs`, choose
    the checkpoint by `valid_pairs`, and save it to `out_dir` (atomically). `src_lang` / `tgt_lang` are the
    pipeline's languages (en, si, ta), mapped by `settings.lang_codes`."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    s = settings
    if s.backend != "pretrained":
        raise ValueError(f"nmt: finetune_pretrained needs backend: pretrained, got {s.backend!r}")
    _prepare(s, train_pairs)
    source, revision = _pretrained_source(s)
    src_code, tgt_code = s.code(src_lang), s.code(tgt_lang)
    tokenizer = AutoTokenizer.from_pretrained(
        source, revision=revision, trust_remote_code=s.trust_remote_code
    )
    _lang_token_id(tokenizer, src_code, f"lang_codes.{src_lang}")
    forced = _lang_token_id(tokenizer, tgt_code, f"lang_codes.{tgt_lang}")
    model = AutoModelForSeq2SeqLM.from_pretrained(
        source, revision=revision, trust_remote_code=s.trust_remote_code
    )
    if model.config.decoder_start_token_id is None:
        raise SettingsError(f"nmt: {source} has no decoder_start_token_id: not a seq2seq translation model")
    with atomic_path(out_dir) as tmp:
        work = tmp.parent / "work"
        train_rows = _encode_pretrained(tokenizer, train_pairs, s.max_length, src_code, tgt_code)
        valid_rows = _encode_pretrained(tokenizer, valid_pairs, s.max_length, src_code, tgt_code)
        trainer, args, summary = _fit(model, tokenizer, train_rows, valid_rows, s, work)
        generation = trainer.model.generation_config
        generation.num_beams = s.beam_size
        generation.forced_bos_token_id = forced
        summary["parameters"] = sum(p.numel() for p in trainer.model.parameters())
        meta = {"backend": "pretrained", "src_lang": src_lang, "tgt_lang": tgt_lang, "src_code": src_code,
                "tgt_code": tgt_code, "forced_bos": forced, "base_model": source, "revision": revision,
                "settings": s.to_dict(), "training": summary}  # fmt: skip
        _save(tmp, trainer, tokenizer, args, meta)
    return summary


def train(train_pairs: Sequence[Pair], valid_pairs: Sequence[Pair], settings: NMTSettings,
          out_dir: str | os.PathLike, *, src_lang: str, tgt_lang: str) -> dict[str, Any]:  # fmt: skip
    """`train_scratch` or `finetune_pretrained`, by `settings.backend`."""
    fn = train_scratch if settings.backend == "scratch" else finetune_pretrained
    return fn(train_pairs, valid_pairs, settings, out_dir, src_lang=src_lang, tgt_lang=tgt_lang)


# --- translation ---------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _autocast(device: str, precision: str) -> Iterator[None]:
    """The training precision's autocast for inference (lem.training.precision_flags); none on the CPU."""
    import torch

    from lem.training import precision_flags

    flags = precision_flags(precision, device)
    dtype = torch.bfloat16 if flags.get("bf16") else torch.float16 if flags.get("fp16") else None
    if dtype is None or not device.startswith("cuda"):
        yield
        return
    with torch.autocast("cuda", dtype=dtype):
        yield


def translate(model_dir: str | os.PathLike, sentences: Sequence[str], settings: NMTSettings) -> list[str]:
    """Translations of `sentences` by the model in `model_dir` (written by `train_scratch` or
    `finetune_pretrained`): beam search of `settings.beam_size` (1: greedy), at most `settings.max_length`
    new tokens, batches of `settings.eval_batch_size` sentences of similar length; deterministic."""
    import torch
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    from lem.training import pick_device, set_threads

    s = settings
    set_threads(s.threads)
    model_dir = Path(model_dir)
    meta = read_json(model_dir / NMT_JSON)
    device = pick_device(s.device)
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModelForSeq2SeqLM.from_pretrained(str(model_dir)).to(device).eval()
    if meta.get("src_code"):
        tokenizer.src_lang = meta["src_code"]
    kwargs: dict[str, Any] = {"num_beams": s.beam_size, "do_sample": False, "max_new_tokens": s.max_length}
    if meta.get("forced_bos") is not None:
        kwargs["forced_bos_token_id"] = int(meta["forced_bos"])
    if s.beam_size > 1:
        kwargs["early_stopping"] = True
    order = sorted(range(len(sentences)), key=lambda i: (len(sentences[i]), i))
    out: list[str | None] = [None] * len(sentences)
    t0 = time.perf_counter()
    with torch.inference_mode(), _autocast(device, s.precision):
        for lo in range(0, len(order), s.eval_batch_size):
            idx = order[lo : lo + s.eval_batch_size]
            enc = tokenizer(
                [sentences[i] for i in idx], truncation=True, max_length=s.max_length, padding=True,
                return_tensors="pt",
            ).to(device)  # fmt: skip
            enc.pop("token_type_ids", None)
            generated = model.generate(**enc, **kwargs)
            for i, text in zip(idx, tokenizer.batch_decode(generated, skip_special_tokens=True), strict=True):
                out[i] = text.strip()
    log.info("nmt: translated %d sentences in %.1fs", len(sentences), time.perf_counter() - t0)
    return [t or "" for t in out]


# --- scores ------------------------------------------------------------------------------------------------


def _metrics(lang: str | None, bleu_tokenize: str, chrf_word_order: int):
    from sacrebleu.metrics import BLEU, CHRF

    return {
        "BLEU": BLEU(tokenize=bleu_tokenize, trg_lang=lang or ""),
        "chrF": CHRF(word_order=chrf_word_order),
    }


def _check_lengths(hypotheses: Sequence[str], references: Sequence[str], what: str = "hypotheses") -> None:
    if len(hypotheses) != len(references):
        raise InputError(f"nmt: {len(hypotheses)} {what} for {len(references)} references")
    if not references:
        raise InputError("nmt: no references to score against")


def score(hypotheses: Sequence[str], references: Sequence[str], lang: str | None = None, *,
          bleu_tokenize: str = "13a", chrf_word_order: int = 0) -> dict[str, Any]:  # fmt: skip
    """Corpus-level BLEU and chrF (sacrebleu, one reference per sentence) with their signatures."""
    _check_lengths(hypotheses, references)
    metrics = _metrics(lang, bleu_tokenize, chrf_word_order)
    bleu = metrics["BLEU"].corpus_score(list(hypotheses), [list(references)])
    chrf = metrics["chrF"].corpus_score(list(hypotheses), [list(references)])
    return {
        "bleu": float(bleu.score),
        "chrf": float(chrf.score),
        "bleu_detail": {
            "precisions": [float(p) for p in bleu.precisions],
            "bp": float(bleu.bp),
            "sys_len": int(bleu.sys_len),
            "ref_len": int(bleu.ref_len),
        },
        "chrf_name": chrf.name,  # chrF2, or chrF2++ with word_order 2
        "signatures": {
            "bleu": str(metrics["BLEU"].get_signature()),
            "chrf": str(metrics["chrF"].get_signature()),
        },
    }


@contextlib.contextmanager
def _sacrebleu_seed(seed: int) -> Iterator[None]:
    """sacrebleu's paired test reads its seed from the environment (SACREBLEU_SEED) when it is built."""
    old = os.environ.get("SACREBLEU_SEED")
    os.environ["SACREBLEU_SEED"] = str(int(seed))
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("SACREBLEU_SEED", None)
        else:
            os.environ["SACREBLEU_SEED"] = old


def paired_bootstrap(baseline_hyps: Sequence[str], system_hyps_by_name: Mapping[str, Sequence[str]],
                     references: Sequence[str], n: int = 1000, seed: int = 12345, *,
                     baseline_name: str = "baseline", lang: str | None = None, bleu_tokenize: str = "13a",
                     chrf_word_order: int = 0) -> dict[str, Any]:  # fmt: skip
    """sacrebleu's paired bootstrap resampling test (`sacrebleu.significance.PairedTest`, test_type `bs`,
    the `--paired-bs` of its command line; Koehn 2004) of each system against the baseline, BLEU and chrF.

    Returns `{"baseline", "n_samples", "seed", "signatures": {metric: ...}, "systems": {name: {metric:
    {"score", "mean", "ci", "p_value"}}}}`: `mean` and `ci` are the bootstrap mean and the half-width of its
    95 % interval, `p_value` the probability of the observed difference from the baseline under the null
    hypothesis (None for the baseline itself). Deterministic for a given `seed` (>= 1: sacrebleu reads 0 as
    "unseeded")."""
    from sacrebleu.significance import PairedTest

    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 1:
        raise ValueError(f"nmt: paired bootstrap seed={seed!r}: expected an integer >= 1")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"nmt: paired bootstrap n={n!r}: expected an integer >= 1")
    _check_lengths(baseline_hyps, references, "baseline hypotheses")
    for name, hyps in system_hyps_by_name.items():
        _check_lengths(hyps, references, f"hypotheses of {name!r}")
    if not system_hyps_by_name or baseline_name in system_hyps_by_name:
        raise UsageError(f"nmt: paired bootstrap needs systems other than the baseline {baseline_name!r}")
    named = [(baseline_name, list(baseline_hyps))] + [(k, list(v)) for k, v in system_hyps_by_name.items()]
    with _sacrebleu_seed(seed):
        test = PairedTest(
            named,
            _metrics(lang, bleu_tokenize, chrf_word_order),
            [list(references)],
            test_type="bs",
            n_samples=n,
        )
        signatures, table = test()
    systems: dict[str, dict[str, Any]] = {name: {} for name in table["System"]}
    for metric, results in table.items():
        if metric == "System":
            continue
        for name, r in zip(table["System"], results, strict=True):
            systems[name][metric] = {
                "score": float(r.score),
                "mean": None if r.mean is None else float(r.mean),
                "ci": None if r.ci is None else float(r.ci),
                "p_value": None if r.p_value is None else float(r.p_value),
            }
    return {
        "baseline": baseline_name,
        "test": "paired bootstrap resampling (sacrebleu)",
        "n_samples": n,
        "seed": seed,
        "signatures": {metric: str(sig) for metric, sig in signatures.items()},
        "systems": systems,
    }


# --- one run per (variant, kept share) ------------------------------------------------------------------------


def stale_temporaries(out: str | os.PathLike) -> list[Path]:
    """The hidden folders `lem.files.atomic_path` made beside `out` (`.<name>.<8 characters of mkdtemp>`)
    that a killed run left behind: at paper scale one holds a partly trained NLLB model. Only the job that
    writes `out` calls this (Snakemake runs one at a time), so none of them is in use."""
    out = Path(out)
    pattern = re.compile(rf"\.{re.escape(out.name)}\.[a-z0-9_]{{8}}")
    if not out.parent.is_dir():
        return []
    return sorted(p for p in out.parent.iterdir() if p.is_dir() and pattern.fullmatch(p.name))


def run_nmt(train_tsv: str | os.PathLike, valid_tsv: str | os.PathLike,
            test_tsv: str | os.PathLike | Sequence[str | os.PathLike], settings: NMTSettings,
            out_dir: str | os.PathLike, keys: dict[str, str] | None = None, *,
            pair: str | None = None) -> dict[str, Any]:  # fmt: skip
    """Train on `train_tsv` (the selected pairs), choose the checkpoint on `valid_tsv`, translate the test
    set (`test_tsv`: a TSV, or two line-aligned files such as FLoRes-200's), and write `out_dir` atomically:
    `model/`, `hypotheses.txt`, `references.txt`, `metrics.json`. `pair` (`si-en`: the TSVs' src and tgt
    languages; `keys["pair"]` when not given) sets the language codes and the direction (`reverse`)."""
    s = settings
    s.validate()
    pair = pair or (keys or {}).get("pair")
    if pair is None:
        raise UsageError("nmt: run_nmt needs the pair (pair=, or keys['pair'])")
    src_lang, tgt_lang = s.direction(pair)
    train_pairs = read_pairs(train_tsv)
    valid_pairs = read_pairs(valid_tsv)
    test_pairs = read_test_set(test_tsv)
    if s.reverse:
        train_pairs, valid_pairs, test_pairs = flip(train_pairs), flip(valid_pairs), flip(test_pairs)
    for stale in stale_temporaries(out_dir):
        log.info("nmt: removing %s, the temporary folder of an interrupted run", stale)
        shutil.rmtree(stale, ignore_errors=True)
    with atomic_path(out_dir) as tmp:
        tmp.mkdir()
        summary = train(train_pairs, valid_pairs, s, tmp / "model", src_lang=src_lang, tgt_lang=tgt_lang)
        sources = [a for a, _ in test_pairs]
        references = [b for _, b in test_pairs]
        hypotheses = translate(tmp / "model", sources, s)
        (tmp / "hypotheses.txt").write_text(
            "".join(h.replace("\n", " ") + "\n" for h in hypotheses), encoding="utf-8"
        )
        (tmp / "references.txt").write_text("".join(r + "\n" for r in references), encoding="utf-8")
        scores = score(hypotheses, references, tgt_lang, bleu_tokenize=s.bleu_tokenize,
                       chrf_word_order=s.chrf_word_order)  # fmt: skip
        metrics = {
            "bleu": scores["bleu"],
            "chrf": scores["chrf"],
            "signatures": scores["signatures"],
            "bleu_detail": scores["bleu_detail"],
            "chrf_name": scores["chrf_name"],
            "src_lang": src_lang,
            "tgt_lang": tgt_lang,
            "n_train": len(train_pairs),
            "n_valid": len(valid_pairs),
            "n_test": len(test_pairs),
            "train": str(train_tsv),
            "valid": str(valid_tsv),
            "test": [str(p) for p in test_tsv]
            if not isinstance(test_tsv, (str, os.PathLike))
            else str(test_tsv),
            "training": summary,
            "settings": s.to_dict(),
        }
        write_json(tmp / "metrics.json", with_keys(metrics, keys))
    log.info("nmt %s -> %s: BLEU %.2f chrF %.2f on %d test pairs (%d training pairs) -> %s",
             src_lang, tgt_lang, metrics["bleu"], metrics["chrf"], len(test_pairs), len(train_pairs), out_dir)  # fmt: skip
    return with_keys(metrics, keys)


def compare_runs(run_dirs: Mapping[str, str | os.PathLike], baseline: str, out: str | os.PathLike,
                 settings: NMTSettings, keys: dict[str, str] | None = None) -> dict[str, Any]:  # fmt: skip
    """The paired bootstrap of `run_nmt` folders (same test set) against the `baseline` run, written to
    `out` (JSON, atomically): one call per (pair, kept share) over the variants."""
    if baseline not in run_dirs:
        raise UsageError(f"nmt: baseline {baseline!r} is not among the runs {sorted(run_dirs)}")

    def lines(path: Path) -> list[str]:
        return path.read_text(encoding="utf-8").split("\n")[:-1]

    refs = {name: lines(Path(d) / "references.txt") for name, d in run_dirs.items()}
    if any(r != refs[baseline] for r in refs.values()):
        raise InputError(f"nmt: the runs {sorted(run_dirs)} were not scored on the same references")
    hyps = {name: lines(Path(d) / "hypotheses.txt") for name, d in run_dirs.items()}
    tgt = read_json(Path(run_dirs[baseline]) / "metrics.json").get("tgt_lang")
    result = paired_bootstrap(
        hyps[baseline], {k: v for k, v in hyps.items() if k != baseline}, refs[baseline],
        n=settings.bootstrap_samples, seed=settings.bootstrap_seed, baseline_name=baseline, lang=tgt,
        bleu_tokenize=settings.bleu_tokenize, chrf_word_order=settings.chrf_word_order,
    )  # fmt: skip
    result["runs"] = {name: str(d) for name, d in run_dirs.items()}
    write_json(out, with_keys(result, keys))
    return with_keys(result, keys)


# --- the command line (the rules of workflow/rules/nmt.smk) ----------------------------------------------------


def cmd_select(a) -> None:
    stats = select_top(a.ranking, a.pairs, a.out, share=a.share)
    log.info("nmt select: %s", stats)


def cmd_run(a) -> None:
    test = a.test[0] if len(a.test) == 1 else a.test
    run_nmt(a.train, a.valid, test, a.settings, a.out_dir, a.keys, pair=a.pair)


def cmd_heldout(a) -> None:
    from lem.data.webmined import prepare_test_set

    n = prepare_test_set(a.out, corpus=a.corpus, src_file=a.src, tgt_file=a.tgt)
    log.info("nmt heldout: %d pairs -> %s", n, a.out)


def _named(items: Sequence[str]) -> dict[str, str]:
    out = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise UsageError(f"nmt compare: --runs {item!r}: expected NAME=RUN_DIR")
        out[name] = path
    return out


def cmd_compare(a) -> None:
    compare_runs(_named(a.runs), a.baseline, a.out, a.settings, a.keys)


from lem.stage import Stage, Verb, arg  # noqa: E402 - the command line, after the library

STAGE = Stage(
    "nmt",
    "train NMT on the top share of a ranked corpus, score BLEU/chrF, compare runs (paired bootstrap)",
    (
        Verb("heldout", "an NMT validation or test set as src<TAB>tgt (from a TSV or two line-aligned files)",
             cmd_heldout, (
            arg("--corpus", default=None, help="TSV with header src, tgt"),
            arg("--src", default=None, help="line-aligned source side (FLoRes-200 devtest/<code>.devtest)"),
            arg("--tgt", default=None),
            arg("--out", required=True),
        )),
        Verb("select", "the top share of a corpus in the order of a ranking", cmd_select, (
            arg("--ranking", required=True, help="scores.tsv of lem curate rank / control"),
            arg("--pairs", required=True, help="pairs.tsv of lem curate prepare"),
            arg("--share", type=float, required=True, help="share of the ranked corpus kept, in (0, 1]"),
            arg("--out", required=True),
        )),
        Verb("run", "train on the selected pairs, translate the test set, score BLEU and chrF", cmd_run, (
            arg("--train", required=True),
            arg("--valid", required=True),
            arg("--test", nargs="+", required=True, help="a src<TAB>tgt TSV, or two line-aligned files"),
            arg("--pair", required=True, help="the pair of the TSVs' columns, e.g. si-en"),
            arg("--out-dir", required=True, help="model/, hypotheses.txt, references.txt, metrics.json"),
        ), settings=NMTSettings, keys=True),
        Verb("compare", "sacrebleu's paired bootstrap of runs against a baseline run", cmd_compare, (
            arg("--runs", nargs="+", required=True, help="NAME=RUN_DIR for every run, the baseline's too"),
            arg("--baseline", required=True),
            arg("--out", required=True),
        ), settings=NMTSettings, keys=True),
    ),
)  # fmt: skip
