"""Code-mixed sentiment: fine-tune a pre-trained model for sentence classification, report macro-F1.

The model's encoder comes from a (continually) pre-trained masked-LM folder; a fresh classification head
is trained on the train split until validation macro-F1 stops rising (early stopping: `patience` epochs
without a gain, at most `epochs`), the epoch with the best validation macro-F1 is kept, and the test split
is scored once. Splits are the prepared TSV files (`text<TAB>label`, header) of `lem data sentiment`.
"""

from __future__ import annotations

import argparse
import csv
import logging
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lem.core import interrupt, training
from lem.core.files import with_keys, write_json
from lem.core.inputs import InputError
from lem.core.stage import Stage, UsageError, Verb, arg
from lem.core.training import BATCH_KEY, TrainingSettings
from lem.evidence.chance import classification_chance

# Imported inside functions: sklearn, torch, transformers and datasets (planning reads SentimentSettings from
# this module and needs none of them)

log = logging.getLogger("lem.sentiment")


DEFAULT_MAX_LENGTH = 128
CLASS_WEIGHTS = ("none", "balanced")


@dataclass(frozen=True)
class SentimentSettings(TrainingSettings):
    """Fine-tuning settings (`sentiment.training`); epochs, batch_size, learning_rate, weight_decay and
    precision are `lem.core.training.TrainingSettings`', with sentiment's defaults."""

    SECTION = "sentiment settings"

    epochs: float = 10.0  # at most; early stopping ends sooner (`patience`)
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    max_length: int | None = None  # None: 128, or the model's positions when fewer; a set value must fit
    patience: int | None = 3  # epochs without a higher validation macro-F1 before stopping; None: all epochs
    class_weights: str = "none"  # none | balanced: each class's loss weighted by n / (classes x its count)
    group_by_length: bool = False  # batches of similar lengths (less padding; changes batch composition)

    def validate(self) -> None:
        super().validate()
        if self.max_length is not None and self.max_length < 1:
            raise self.refused("max_length", "an integer >= 1 or null")
        if self.patience is not None and self.patience < 1:
            raise self.refused("patience", "an integer >= 1 or null (no early stopping)")
        if self.class_weights not in CLASS_WEIGHTS:
            raise self.refused("class_weights", f"one of {CLASS_WEIGHTS}")
        if self.epochs != int(self.epochs):
            raise self.refused("epochs", "a whole number of epochs (the model is chosen per epoch)")


def read_split(path: str | Path) -> tuple[list[str], list[str]]:
    """Read a prepared `text<TAB>label` file (with header); fail naming the file and line."""
    texts, labels = [], []
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(reader, None)
        if header != ["text", "label"]:
            raise InputError(f"{path}:1: expected the header 'text<TAB>label', found {header!r}")
        for lineno, row in enumerate(reader, start=2):
            if len(row) != 2:
                raise InputError(
                    f"{path}:{lineno}: expected 2 tab-separated fields (text, label), found {len(row)}"
                )
            texts.append(row[0])
            labels.append(row[1])
    if not texts:
        raise InputError(f"{path}: no examples")
    return texts, labels


def macro_f1_report(gold: list[int], pred: list[int], names: list[str]) -> dict[str, Any]:
    from sklearn.metrics import accuracy_score, f1_score

    labels = list(range(len(names)))
    per_class = f1_score(gold, pred, labels=labels, average=None, zero_division=0)
    return {
        "macro_f1": float(f1_score(gold, pred, labels=labels, average="macro", zero_division=0)),
        "accuracy": float(accuracy_score(gold, pred)),
        "per_class_f1": {n: float(f) for n, f in zip(names, per_class, strict=True)},
    }


def class_weights(labels: list[str], names: list[str], how: str) -> list[float] | None:
    """Per class (in `names` order) the loss weight of `how`: None for `none`; `balanced`: n / (classes x
    the class's count in `labels`), so each class weighs as much in the loss as in macro-F1."""
    if how == "none":
        return None
    counts = [labels.count(n) for n in names]
    return [len(labels) / (len(names) * c) for c in counts]


def weighted_loss(weights: list[float]):
    """The Trainer's `compute_loss_func`: cross-entropy with class `weights` (torch's weighted mean)."""
    import torch

    w = torch.tensor(weights, dtype=torch.float32)

    def loss(outputs, labels, num_items_in_batch=None):
        logits = outputs["logits"] if isinstance(outputs, dict) else outputs[0]
        return torch.nn.functional.cross_entropy(logits.float(), labels, weight=w.to(logits.device))

    return loss


def read_splits(train_tsv: str, valid_tsv: str, test_tsv: str) -> tuple[dict, list[str]]:
    """The three splits (name -> (texts, labels)) and the class names (the train split's, sorted); fails on a
    one-class train split or a label the train split lacks."""
    splits = {
        name: read_split(p) for name, p in (("train", train_tsv), ("valid", valid_tsv), ("test", test_tsv))
    }
    names = sorted(set(splits["train"][1]))
    if len(names) < 2:
        raise InputError(
            f"{train_tsv}: expected at least two classes, got only {names[0]!r}: a one-class set scores macro-F1 "
            "1.0 whatever the model"
        )
    for (name, (_, labels)), path in zip(splits.items(), (train_tsv, valid_tsv, test_tsv), strict=True):
        unseen = sorted(set(labels) - set(names))
        if unseen:
            raise InputError(f"{path}: {name} split has labels {unseen} that the train split lacks")
    return splits, names


def max_length_of(settings: SentimentSettings, config, model_dir: str) -> int:
    """Tokens per example: `settings.max_length`, else 128 or the model's positions when fewer (`config`: the
    model's configuration); a set value longer than the model's positions fails."""
    positions = config.max_position_embeddings - 2
    if settings.max_length is None:
        return min(DEFAULT_MAX_LENGTH, positions)
    if settings.max_length > positions:
        raise UsageError(
            f"--settings max_length (config sentiment.training.max_length): {settings.max_length} exceeds the "
            f"{positions} tokens of {model_dir} (max_position_embeddings - 2); at most {positions}"
        )
    return settings.max_length


def without_batch_key(collate):
    """`collate` of rows that may carry the length-grouped sampler's batch index (`BATCH_KEY`), left out."""

    def call(rows: list[dict]) -> dict:
        return collate([{k: v for k, v in r.items() if k != BATCH_KEY} for r in rows])

    return call


def train_and_predict(model, tokenizer, data: dict, names: list[str], weights: list[float] | None,
                      settings: SentimentSettings, seed: int, work: Path):  # fmt: skip
    """Fine-tune on `data["train"]`, keep the epoch of the best validation macro-F1, predict `data["test"]`;
    returns the test predictions, the best validation macro-F1 and the validation macro-F1 per epoch."""
    from transformers import DataCollatorWithPadding

    def metrics(pred) -> dict:
        return {
            "macro_f1": macro_f1_report(
                list(pred.label_ids), list(np.argmax(pred.predictions, axis=-1)), names
            )["macro_f1"]
        }

    args = training.training_arguments(
        work,
        policy=training.CheckpointPolicy.best_epoch("macro_f1", greater_is_better=True),
        seed=seed,
        data_seed=seed,
        epochs=settings.epochs,
        batch_size=settings.batch_size,
        eval_batch_size=max(64, settings.batch_size),
        learning_rate=settings.learning_rate,
        weight_decay=settings.weight_decay,
        warmup=settings.warmup_ratio,  # a float < 1 is a share of the steps
        logging_steps=50,
        precision=settings.precision,
    )
    callbacks = []
    if settings.patience is not None:
        from transformers import EarlyStoppingCallback

        callbacks.append(EarlyStoppingCallback(early_stopping_patience=settings.patience))
    trainer = training.make_trainer(
        model=model,
        args=args,
        train_dataset=data["train"],
        eval_dataset=data["valid"],
        data_collator=without_batch_key(DataCollatorWithPadding(tokenizer)),
        tokenizer=tokenizer,
        compute_metrics=metrics,
        callbacks=callbacks,
        # by length: the Trainer's shuffle per epoch (seeded `seed + epoch`), cut into megabatches sorted by length
        train_batches=training.BatchIndexSampler(
            len(data["train"]), settings.batch_size, seed, lengths=training.row_lengths(data["train"])
        )
        if settings.group_by_length
        else None,
    )
    if weights is not None:
        trainer.compute_loss_func = weighted_loss(weights)
    trainer.train()
    pred = trainer.predict(data["test"])
    per_epoch = [h["eval_macro_f1"] for h in trainer.state.log_history if "eval_macro_f1" in h]
    return pred, trainer.state.best_metric, per_epoch


def fresh_work_folder(work_dir: str | Path | None) -> Path:
    """The checkpoints' folder: a new temporary one, or `work_dir` emptied (what a killed run left there)."""
    if work_dir is None:
        return Path(tempfile.mkdtemp(prefix="lem-sentiment-"))
    work = Path(work_dir)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    return work


@dataclass
class Prepared:
    """What every fine-tuning seed of one job shares: the splits read and encoded once, the class names."""

    model_dir: str
    splits: dict
    names: list[str]
    tokenizer: Any
    data: dict
    weights: list[float] | None


def prepare(
    model_dir: str, train_tsv: str, valid_tsv: str, test_tsv: str, settings: SentimentSettings
) -> Prepared:
    """Read the three splits, check the model's positions, and encode them once for every seed."""
    from datasets import Dataset
    from transformers import AutoConfig, AutoTokenizer

    splits, names = read_splits(train_tsv, valid_tsv, test_tsv)
    index = {n: i for i, n in enumerate(names)}
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    max_length = max_length_of(settings, AutoConfig.from_pretrained(model_dir), model_dir)

    def encode(texts, labels):
        enc = tokenizer(texts, truncation=True, max_length=max_length)
        return Dataset.from_dict({**enc, "labels": [index[x] for x in labels]})

    data = {name: encode(*split) for name, split in splits.items()}
    weights = class_weights(splits["train"][1], names, settings.class_weights)
    return Prepared(str(model_dir), splits, names, tokenizer, data, weights)


def finetune_prepared(
    prep: Prepared, settings: SentimentSettings, seed: int, work_dir: str | Path | None = None
) -> dict:
    """One fine-tuning run of `seed` on the prepared splits: a fresh head, the best epoch kept, the test
    split scored once; every random choice from `seed`, so a run gives the same metrics alone or after
    other seeds in the same process."""
    from transformers import AutoModelForSequenceClassification

    names, model_dir = prep.names, prep.model_dir
    training.seed_everything(seed)  # the new classification head's initialisation
    model = AutoModelForSequenceClassification.from_pretrained(
        model_dir,
        num_labels=len(names),
        id2label=dict(enumerate(names)),
        label2id={n: i for i, n in enumerate(names)},
        trust_remote_code=False,
        attn_implementation="sdpa",
    )
    work = fresh_work_folder(work_dir)
    try:
        pred, best_valid, per_epoch = train_and_predict(
            model, prep.tokenizer, prep.data, names, prep.weights, settings, seed, work
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    gold_ids = [int(x) for x in pred.label_ids]
    pred_ids = [int(x) for x in np.argmax(pred.predictions, axis=-1)]
    report = macro_f1_report(gold_ids, pred_ids, names)
    # the Trainer keeps the first epoch of the highest validation macro-F1 (a later tie is no improvement)
    best_epoch = 1 + per_epoch.index(max(per_epoch))
    counts = {name: {n: int(lbls.count(n)) for n in names} for name, (_, lbls) in prep.splits.items()}
    report.update(
        {
            "valid_macro_f1": best_valid,  # of the epoch kept (lem.core.training.CheckpointPolicy.best_epoch)
            "valid_macro_f1_per_epoch": per_epoch,
            "best_epoch": best_epoch,  # 1-based: the epoch whose model scored the test split
            "epochs_run": len(per_epoch),  # early stopping: fewer than `max_epochs` when validation stalled
            "max_epochs": int(settings.epochs),
            "stopped_early": len(per_epoch) < int(settings.epochs),
            "test_pred_counts": {n: pred_ids.count(i) for i, n in enumerate(names)},
            "labels": names,
            "counts": counts,
            # per test example, in file order (label indices): the report's paired significance test
            "test_gold": gold_ids,
            "test_pred": pred_ids,
            "chance": classification_chance(prep.splits["test"][1], names),  # the best input-blind classifier
            "seed": seed,
            "model": model_dir,
        }
    )
    log.info(
        "sentiment %s seed %d: test macro-F1 %.4f (valid %.4f at epoch %d of %d run)",
        model_dir,
        seed,
        report["macro_f1"],
        best_valid or float("nan"),
        best_epoch,
        len(per_epoch),
    )
    return report


def finetune(
    model_dir: str,
    train_tsv: str,
    valid_tsv: str,
    test_tsv: str,
    settings: SentimentSettings,
    seed: int,
    work_dir: str | Path | None = None,
) -> dict:
    """One fine-tuning run (`prepare`, then `finetune_prepared`)."""
    prep = prepare(model_dir, train_tsv, valid_tsv, test_tsv, settings)
    return finetune_prepared(prep, settings, seed, work_dir)


def work_folder(out: str | Path) -> Path:
    """The checkpoints' folder of the job that writes `out`: hidden beside it, not in the system's temporary
    folder, where a killed job's checkpoints stayed; the rerun of the job removes it first."""
    out = Path(out)
    return out.parent / f".{out.name}.work"


def cmd_finetune(a: argparse.Namespace) -> None:
    """Every `--seed` in one process (the splits read and encoded once, one interpreter start-up), each
    seed's metrics written to its `--out` as soon as it is done; `--keys` gains `finetune_seed` per file."""
    seeds, outs = list(a.seed), list(a.out)
    if len(seeds) != len(outs):
        raise UsageError(f"--seed and --out: {len(seeds)} seeds but {len(outs)} output files (one per seed)")
    if len(set(seeds)) != len(seeds):
        raise UsageError(f"--seed: {seeds} repeats a seed (each fine-tuning seed once)")
    if len(set(map(str, outs))) != len(outs):
        raise UsageError("--out: an output file named twice")
    # an interrupt (SIGINT, SIGTERM) is never a success, wherever it lands (a KeyboardInterrupt swallowed in a
    # `__del__` too): checked between seeds and at the end; every --out (the seeds done too) and work folder
    # is removed, and the command exits 130 (lem.core.interrupt.stop_on_interrupt)
    with interrupt.stop_on_interrupt(outs):
        prep = prepare(a.model, a.train, a.valid, a.test, a.settings)
        for seed, out in zip(seeds, outs, strict=True):
            interrupt.check()
            report = finetune_prepared(prep, a.settings, seed, work_folder(out))
            keys = None if a.keys is None else dict(sorted({**a.keys, "finetune_seed": str(seed)}.items()))
            interrupt.check()
            write_json(out, with_keys(report, keys))


STAGE = Stage(
    "sentiment",
    __doc__.splitlines()[0],
    (
        Verb("finetune", "fine-tune on train, select on valid, score on test", cmd_finetune, (
            arg("--model", required=True, help="pre-trained model folder (model and tokenizer)"),
            arg("--train", required=True),
            arg("--valid", required=True),
            arg("--test", required=True),
            arg("--seed", type=int, nargs="+", required=True, help="fine-tuning seeds, run one after another"),
            arg("--out", nargs="+", required=True, help="metrics.json per seed, in --seed's order"),
        ), settings=SentimentSettings, keys=True, threads=True),
    ),
)  # fmt: skip
