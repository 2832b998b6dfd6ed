"""NMT training: the seq2seq collator, the scratch Transformer and the pretrained fine-tuning."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lem.core.files import atomic_path, write_json
from lem.core.inputs import InputError
from lem.core.settings import SettingsError
from lem.core.training import (
    CheckpointPolicy,
    make_trainer,
    save_model_dir,
    scheduled_evaluation_callback,
    seed_everything,
    set_threads,
    training_arguments,
    training_schedule,
    write_json_lines,
)
from lem.nmt.data import Pair
from lem.nmt.settings import COMMIT, HUB_ID, NMT_JSON, NMTSettings

# Imported inside functions: torch, transformers and lem.tokenizer, which loads tokenizers (`lem nmt --help`
# imports this module and needs none)

log = logging.getLogger("lem.nmt")


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
    save_model_dir(directory, trainer.model, tokenizer, args)
    write_json_lines(directory / "train_log.jsonl", trainer.state.log_history)
    write_json(directory / NMT_JSON, meta)


def _prepare(s: NMTSettings, train_pairs: Sequence[Pair]) -> None:
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
