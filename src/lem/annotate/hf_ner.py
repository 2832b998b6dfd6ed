"""NER with any Hugging Face token-classification model, and fine-tuning one on CoNLL NER data.

A word takes the label of its first subword (the authors' rule). Words past the model's maximum length
are labelled O. Runs batched, on GPU when one exists (device `auto`). Fine-tuning is `lem.core.training`'s: the
epoch with the best validation F1 is kept when a validation set is given.
"""

from __future__ import annotations

import logging
import math
import os
import shutil
import time
from dataclasses import dataclass

import numpy as np

from lem.annotate import BackendError
from lem.core import training
from lem.core.entities import repair_iob2, to_iob2
from lem.core.files import atomic_path, write_json
from lem.core.training import TrainingSettings, pick_device

# Imported inside functions: torch, transformers and seqeval (planning reads TrainNERSettings from this module
# and needs none of them)

log = logging.getLogger(__name__)
LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG", "B-MISC", "I-MISC"]


class HFNER:
    """Token-classification inference on pre-segmented words (`path`: a local model dir or a hub id)."""

    def __init__(self, path: str, device: str = "auto", batch_size: int = 32, max_length: int = 256) -> None:
        import torch
        from transformers import AutoModelForTokenClassification, AutoTokenizer

        self.torch = torch
        self.device = pick_device(device)
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        if not self.tokenizer.is_fast:
            raise BackendError(f"{path}: hf_ner needs a fast tokenizer (word_ids)")
        self.model = (
            AutoModelForTokenClassification.from_pretrained(path, attn_implementation="sdpa")
            .to(self.device)
            .eval()
        )
        self.id2label = {int(k): v for k, v in self.model.config.id2label.items()}
        # the model's own positions bound the length (XLM-R positions start after the padding index)
        positions = getattr(self.model.config, "max_position_embeddings", max_length + 2) - 2
        self.batch_size, self.max_length = batch_size, min(max_length, positions)
        self.truncated = 0  # sentences whose last words fell past max_length (tagged O, counted, logged)
        log.info("hf_ner %s on %s, batch %d, max length %d", path, self.device, batch_size, self.max_length)

    def tag(self, sentences: list[list[str]]) -> list[list[str]]:
        out: list[list[str]] = [["O"] * len(s) for s in sentences]
        order = sorted((i for i, s in enumerate(sentences) if s), key=lambda i: len(sentences[i]))
        for b in range(0, len(order), self.batch_size):
            idx = order[b : b + self.batch_size]
            enc = self.tokenizer(
                [sentences[i] for i in idx],
                is_split_into_words=True,
                truncation=True,
                max_length=self.max_length,
                padding=True,
                return_tensors="pt",
            )
            with self.torch.inference_mode():
                logits = self.model(**{k: v.to(self.device) for k, v in enc.items()}).logits
            pred = logits.argmax(-1).cpu().tolist()
            for row, i in enumerate(idx):
                labels = out[i]
                seen: set[int] = set()
                for pos, wid in enumerate(enc.word_ids(row)):
                    if wid is not None and wid not in seen:
                        seen.add(wid)
                        labels[wid] = to_iob2(self.id2label[pred[row][pos]])
                self.truncated += len(seen) < len(labels)
                out[i] = repair_iob2(labels)
        if self.truncated:
            log.warning(
                "hf_ner: %d sentence(s) longer than %d subwords so far; their last words are tagged O",
                self.truncated,
                self.max_length,
            )
        return out


@dataclass(frozen=True)
class TrainNERSettings(TrainingSettings):
    """Fine-tuning settings (HF Trainer defaults otherwise: AdamW, linear decay); epochs, batch_size,
    learning_rate, weight_decay and precision are `lem.core.training.TrainingSettings`', with NER's defaults.
    `precision` applies on a GPU only (fp16 autocast by default, `auto` for bf16 where the GPU has it);
    the CPU trains in float32."""

    SECTION = "train-ner settings"
    # the key order of train_metrics.json's `settings` (as written before the shared base)
    KEY_ORDER = ("epochs", "learning_rate", "batch_size", "max_length", "warmup_ratio", "weight_decay", "seed",
                 "device", "on_error", "precision")  # fmt: skip

    epochs: float = 3.0
    batch_size: int = 16
    precision: str = "fp16"
    max_length: int = 128
    warmup_ratio: float = 0.0
    seed: int = 0
    device: str = "auto"
    on_error: str = "raise"

    def validate(self) -> None:
        super().validate()
        if self.max_length < 8:
            raise self.refused("max_length", "an integer >= 8")
        if self.on_error not in ("raise", "skip"):
            raise self.refused("on_error", "raise or skip")


def _encode(tokenizer, sentences, max_length: int) -> list[dict]:
    lab2id = {lab: i for i, lab in enumerate(LABELS)}
    rows = []
    for sent in sentences:
        words = [w for w, _ in sent]
        enc = tokenizer(words, is_split_into_words=True, truncation=True, max_length=max_length)
        labels, prev = [], None
        for wid in enc.word_ids():
            # Loss on the first subword of each word only (the word's label at inference).
            labels.append(-100 if wid is None or wid == prev else lab2id[sent[wid][1]])
            prev = wid
        rows.append(
            {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"], "labels": labels}
        )
    return rows


def train_ner(
    base_model: str,
    train: list[list[tuple[str, str]]],
    out: str | os.PathLike,
    settings: TrainNERSettings | None = None,
    valid: list[list[tuple[str, str]]] | None = None,
) -> dict:
    """Fine-tune `base_model` (dir or hub id) for IOB2 PER/LOC/ORG/MISC on CoNLL sentences; saves the model
    (safetensors), tokenizer and training arguments (JSON) to `out` atomically and returns metrics. With
    `valid`, the model is evaluated after every epoch and the epoch with the best validation F1 is kept
    (`lem.core.training.CheckpointPolicy.best_epoch`); its validation scores are in the metrics."""
    from transformers import (
        AutoModelForTokenClassification,
        AutoTokenizer,
        DataCollatorForTokenClassification,
    )

    s = settings or TrainNERSettings()
    training.seed_everything(s.seed)
    device = pick_device(s.device)
    t0 = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(base_model)
    model = AutoModelForTokenClassification.from_pretrained(
        base_model,
        num_labels=len(LABELS),
        id2label=dict(enumerate(LABELS)),
        label2id={lab: i for i, lab in enumerate(LABELS)},
        ignore_mismatched_sizes=True,
        attn_implementation="sdpa",
    )
    train_rows = _encode(tokenizer, [x for x in train if x], s.max_length)
    valid_rows = _encode(tokenizer, [x for x in valid if x], s.max_length) if valid else None
    steps_per_epoch = math.ceil(len(train_rows) / s.batch_size)
    policy = (
        training.CheckpointPolicy.best_epoch("f1", greater_is_better=True)
        if valid_rows
        else training.CheckpointPolicy.final()
    )
    with atomic_path(out) as tmp:
        args = training.training_arguments(
            tmp / "_trainer",
            policy=policy,
            seed=s.seed,
            epochs=s.epochs,
            batch_size=s.batch_size,
            eval_batch_size=max(32, s.batch_size),
            learning_rate=s.learning_rate,
            weight_decay=s.weight_decay,
            warmup=int(s.warmup_ratio * steps_per_epoch * s.epochs),
            logging_steps=max(1, steps_per_epoch),
            precision=s.precision if device.startswith("cuda") else "fp32",
            device=device,
            use_cpu=device == "cpu",
        )
        trainer = training.make_trainer(
            model=model,
            args=args,
            train_dataset=train_rows,
            eval_dataset=valid_rows,
            data_collator=DataCollatorForTokenClassification(tokenizer),
            tokenizer=tokenizer,
            compute_metrics=token_f1 if valid_rows else None,
            rng_neutral_eval=True,  # the per-epoch evaluation leaves the training as it was without one
        )
        result = trainer.train()
        training.save_model_dir(tmp, trainer.model, tokenizer, trainer.args)
        shutil.rmtree(tmp / "_trainer", ignore_errors=True)
        metrics = {
            "base_model": str(base_model),
            "n_train": len(train_rows),
            "train_loss": round(float(result.training_loss), 4),
            "train_seconds": round(time.perf_counter() - t0, 1),
            "device": device,
            "settings": s.to_dict(),
        }
        if valid_rows:
            metrics.update(validation_record(trainer.state, str(tmp), valid, device, s.max_length))
        write_json(tmp / "train_metrics.json", metrics)
    log.info(
        "train-ner: %d sentences, loss %.3f, %.0fs -> %s",
        len(train_rows),
        metrics["train_loss"],
        metrics["train_seconds"],
        out,
    )
    return metrics


def validation_record(state, model_dir: str, valid: list[list[tuple[str, str]]], device: str,
                      max_length: int) -> dict:  # fmt: skip
    """The metrics of a run with a validation set: the epoch chosen (`selection`: the validation F1 per epoch,
    the best) and the saved model's scores on the validation set as `HFNER` tags it (`valid`)."""
    epochs = [{"epoch": h["epoch"], "f1": h["eval_f1"]} for h in state.log_history if "eval_f1" in h]
    best = state.best_model_checkpoint
    selection = {
        "criterion": "entity F1 of the first subwords' labels on the validation set, every epoch",
        "best_f1": state.best_metric,
        "best_step": int(best.rsplit("-", 1)[-1]) if best else None,
        "epochs": epochs,
    }
    tagger = HFNER(model_dir, device=device, max_length=max_length)
    scores = ner_scores([[t for _, t in x] for x in valid], tagger.tag([[w for w, _ in x] for x in valid]))
    return {"selection": selection, "valid": scores}


def token_f1(pred) -> dict:
    """`compute_metrics` of NER fine-tuning: entity F1 of the labels predicted at the labelled (first)
    subwords, repaired into IOB2 as `HFNER.tag` does."""
    ids = np.argmax(pred.predictions, axis=-1)
    gold, guess = [], []
    for p_row, l_row in zip(ids, pred.label_ids, strict=True):
        keep = l_row != -100
        gold.append([LABELS[int(i)] for i in l_row[keep]])
        guess.append(repair_iob2([to_iob2(LABELS[int(i)]) for i in p_row[keep]]))
    return {"f1": ner_scores(gold, guess)["f1"]}


def ner_scores(gold: list[list[str]], pred: list[list[str]]) -> dict:
    """Entity-level precision / recall / F1 (seqeval, strict IOB2 off: CoNLL evaluation)."""
    from seqeval.metrics import f1_score, precision_score, recall_score

    return {
        "precision": round(float(precision_score(gold, pred)), 4),
        "recall": round(float(recall_score(gold, pred)), 4),
        "f1": round(float(f1_score(gold, pred)), 4),
    }
