"""The static training step (`training.static_shapes`) in a small training run: it selects the checkpoint the
eager path selects. The step itself: tests/unit/test_static_step.py."""

from __future__ import annotations

import pytest
import torch
from support.static_step import feature_rows, tiny_mlm, tokenizer

from lem.masking.collate import MaskingSettings


# two training runs of 10 steps, 5 evaluations each: ~2 s each once transformers is warm
def test_a_small_training_run_selects_the_same_checkpoint_on_both_paths(tmp_path):
    from datasets import Dataset

    from lem.pretrain import PretrainTrainingSettings, train_stage

    torch.set_num_threads(1)
    tok = tokenizer()
    train, valid = feature_rows(92, 6, 30, seed=2), feature_rows(24, 6, 30, seed=3)
    selections = {}
    for path in ("off", "on"):
        settings = PretrainTrainingSettings.from_dict({
            "max_steps": 10, "batch_size": 8, "learning_rate": 1e-2, "checkpoint_every": 2, "min_evaluations": 5,
            "logging_steps": 5, "seed": 4, "stats_examples": 16, "static_shapes": path,
            # the static path's collator (masking, padding, gathering) in a DataLoader worker: the same batches
            "dataloader_num_workers": 1 if path == "on" else 0,
        })  # fmt: skip
        selections[path] = train_stage(
            model=tiny_mlm(seed=1), tokenizer=tok, train_ds=Dataset.from_list(train),
            valid_ds=Dataset.from_list(valid), masking=MaskingSettings.for_variant("lem"), settings=settings,
            out_dir=tmp_path / path / "out", ckpt_dir=tmp_path / path / "ckpt", fp=path,
        )  # fmt: skip
    off, on = selections["off"], selections["on"]
    assert [e["step"] for e in on["evaluations"]] == [e["step"] for e in off["evaluations"]]
    for a, b in zip(off["evaluations"], on["evaluations"], strict=True):
        assert b["eval_loss"] == pytest.approx(a["eval_loss"], rel=1e-4)
    # the lowest validation loss is not the last step's here (step 8 of 10): the choice is a real one
    assert on["best_step"] == off["best_step"] < on["global_steps"]
    assert on["best_checkpoint"] == off["best_checkpoint"]
    assert on["train_loss"] == pytest.approx(off["train_loss"], rel=1e-4)
