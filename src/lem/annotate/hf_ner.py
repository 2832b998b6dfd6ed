"""NER with any Hugging Face token-classification model, and fine-tuning one on CoNLL NER data.

A word takes the label of its first subword (the authors' rule). Words past the model's maximum length
are labelled O. Runs batched, on GPU when one exists (device `auto`).
"""

from __future__ import annotations

import logging
import math
import os
import random
import shutil
import time
from dataclasses import dataclass, fields

from lem.annotate.tagsets import repair_iob2, to_iob2
from lem.files import atomic_path, write_json

log = logging.getLogger(__name__)
LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG", "B-MISC", "I-MISC"]


def pick_device(device: str = "auto") -> str:
    """`auto`: cuda when a GPU is visible, else cpu; an explicit cuda device that is not there fails."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError(
            f"device {device!r} asked for, but no CUDA GPU is visible (use device: auto or cpu)"
        )
    return device


class HFNER:
    """Token-classification inference on pre-segmented words (`path`: a local model dir or a hub id)."""

    def __init__(self, path: str, device: str = "auto", batch_size: int = 32, max_length: int = 256) -> None:
        import torch
        from transformers import AutoModelForTokenClassification, AutoTokenizer

        self.torch = torch
        self.device = pick_device(device)
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        if not self.tokenizer.is_fast:
            raise RuntimeError(f"{path}: hf_ner needs a fast tokenizer (word_ids)")
        self.model = AutoModelForTokenClassification.from_pretrained(path).to(self.device).eval()
        self.id2label = {int(k): v for k, v in self.model.config.id2label.items()}
        self.batch_size, self.max_length = batch_size, max_length
        log.info("hf_ner %s on %s, batch %d, max length %d", path, self.device, batch_size, max_length)

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
                out[i] = repair_iob2(labels)
        return out


@dataclass
class TrainNERSettings:
    """Fine-tuning settings (HF Trainer defaults otherwise: AdamW, linear decay)."""

    epochs: float = 3.0
    learning_rate: float = 5e-5
    batch_size: int = 16
    max_length: int = 128
    warmup_ratio: float = 0.0
    weight_decay: float = 0.0
    seed: int = 0
    device: str = "auto"
    on_error: str = "raise"

    @classmethod
    def from_dict(cls, d: dict | None) -> TrainNERSettings:
        d = dict(d or {})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"train-ner settings: unknown keys {unknown}; known: {sorted(known)}")
        s = cls(**d)
        if s.epochs <= 0 or s.batch_size < 1 or s.max_length < 8 or s.learning_rate <= 0:
            raise ValueError(f"train-ner settings out of range: {s}")
        if s.on_error not in ("raise", "skip"):
            raise ValueError("train-ner settings: on_error must be raise or skip")
        return s


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
    (safetensors) and tokenizer to `out` atomically and returns metrics (validation F1 when `valid`)."""
    import torch
    from transformers import (
        AutoModelForTokenClassification,
        AutoTokenizer,
        DataCollatorForTokenClassification,
        Trainer,
        TrainingArguments,
        set_seed,
    )

    s = settings or TrainNERSettings()
    set_seed(s.seed)
    random.seed(s.seed)
    device = pick_device(s.device)
    t0 = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(base_model)
    model = AutoModelForTokenClassification.from_pretrained(
        base_model,
        num_labels=len(LABELS),
        id2label=dict(enumerate(LABELS)),
        label2id={lab: i for i, lab in enumerate(LABELS)},
        ignore_mismatched_sizes=True,
    )
    train_rows = _encode(tokenizer, [x for x in train if x], s.max_length)
    steps_per_epoch = math.ceil(len(train_rows) / s.batch_size)
    with atomic_path(out) as tmp:
        args = TrainingArguments(
            output_dir=str(tmp / "_trainer"),
            num_train_epochs=s.epochs,
            learning_rate=s.learning_rate,
            per_device_train_batch_size=s.batch_size,
            warmup_steps=int(s.warmup_ratio * steps_per_epoch * s.epochs),
            weight_decay=s.weight_decay,
            seed=s.seed,
            save_strategy="no",
            eval_strategy="no",
            report_to=[],
            logging_steps=max(1, steps_per_epoch),
            use_cpu=device == "cpu",
            fp16=device == "cuda" and torch.cuda.is_available(),
            disable_tqdm=True,
        )
        trainer = Trainer(
            model=model,
            args=args,
            train_dataset=train_rows,
            data_collator=DataCollatorForTokenClassification(tokenizer),
            processing_class=tokenizer,
        )
        result = trainer.train()
        trainer.model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        shutil.rmtree(tmp / "_trainer", ignore_errors=True)
        metrics = {
            "base_model": str(base_model),
            "n_train": len(train_rows),
            "train_loss": round(float(result.training_loss), 4),
            "train_seconds": round(time.perf_counter() - t0, 1),
            "device": device,
            "settings": s.__dict__,
        }
        if valid:
            tagger = HFNER(str(tmp), device=device, max_length=s.max_length)
            metrics["valid"] = ner_scores(
                [[t for _, t in x] for x in valid], tagger.tag([[w for w, _ in x] for x in valid])
            )
        write_json(tmp / "train_metrics.json", metrics)
    log.info(
        "train-ner: %d sentences, loss %.3f, %.0fs -> %s",
        len(train_rows),
        metrics["train_loss"],
        metrics["train_seconds"],
        out,
    )
    return metrics


def ner_scores(gold: list[list[str]], pred: list[list[str]]) -> dict:
    """Entity-level precision / recall / F1 (seqeval, strict IOB2 off: CoNLL evaluation)."""
    from seqeval.metrics import f1_score, precision_score, recall_score

    return {
        "precision": round(float(precision_score(gold, pred)), 4),
        "recall": round(float(recall_score(gold, pred)), 4),
        "f1": round(float(f1_score(gold, pred)), 4),
    }
