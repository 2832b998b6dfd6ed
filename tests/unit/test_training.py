"""lem.core.training: the masked-LM loss on the labelled positions, batches keyed by their global index (workers,
resume), data-parallel runs under torchrun (tests/dag/test_training_torchrun.py), and the launcher."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
from support.builders import training_world
from support.training import stage_settings, weights

from lem.core import training
from lem.core.training import BATCH_KEY
from lem.masking.collate import BatchSeededCollator, MaskingSettings, make_collator
from lem.stand_in import random_mlm, word_level_tokenizer

REPO = Path(__file__).resolve().parents[2]


def random_batch(vocab: int, batch: int = 6, length: int = 24, seed: int = 0) -> dict:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(4, vocab, (batch, length), generator=g)
    lens = torch.randint(length // 2, length + 1, (batch,), generator=g)
    attention = (torch.arange(length)[None, :] < lens[:, None]).long()
    ids[attention == 0] = 1
    chosen = (torch.rand(batch, length, generator=g) < 0.15) & (attention == 1)
    chosen[:, 1] = True  # at least one labelled position per row
    labels = torch.where(chosen, torch.randint(4, vocab, (batch, length), generator=g), -100)
    return {"input_ids": ids, "attention_mask": attention, "labels": labels}


def test_labelled_positions_loss_equals_the_full_head_loss_and_gradients():
    full, ours = random_mlm(3000, dropout=0.0), random_mlm(3000, dropout=0.0)
    batch = random_batch(full.config.vocab_size)
    ref = full(**batch).loss
    ref.backward()
    assert training.use_labelled_positions_loss(ours)
    out = ours(**batch)
    out.loss.backward()
    assert out.loss.dtype == torch.float32
    assert out.loss.item() == pytest.approx(ref.item(), rel=1e-6)
    assert out.logits.shape == (int((batch["labels"] != -100).sum()), full.config.vocab_size)
    grads = dict(ours.named_parameters())
    for name, p in full.named_parameters():
        assert torch.allclose(p.grad, grads[name].grad, rtol=1e-4, atol=1e-7), name
    # normalised by a count given from outside (accumulated batches, other processes): sum / count
    n = int((batch["labels"] != -100).sum())
    assert ours(**batch, num_items_in_batch=torch.tensor(2 * n)).loss.item() == pytest.approx(
        ref.item() / 2, rel=1e-6
    )
    # without labels: the model's own forward (full logits); restore_forward gives back the class's forward
    assert ours(input_ids=batch["input_ids"]).logits.shape == (
        *batch["input_ids"].shape,
        full.config.vocab_size,
    )
    training.restore_forward(ours)
    assert "forward" not in ours.__dict__


def test_models_without_an_lm_head_keep_their_own_loss(caplog):
    from transformers import BertConfig, BertForMaskedLM

    model = BertForMaskedLM(BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                       intermediate_size=32))  # fmt: skip
    assert training.use_labelled_positions_loss(model) is False
    assert "forward" not in model.__dict__ and "every position" in caplog.text


def test_batch_index_sampler_draws_the_trainers_order_and_counts_batches_across_epochs():
    from accelerate.data_loader import SeedableRandomSampler

    sampler = training.BatchIndexSampler(50, 8, seed=7)
    reference = SeedableRandomSampler(list(range(50)), generator=torch.Generator(), data_seed=7)
    assert len(sampler) == 7
    for epoch in (0, 1, 2):
        sampler.set_epoch(epoch)
        reference.set_epoch(epoch)
        batches = list(sampler)
        assert [b for b, _ in sum(batches, [])] == sorted(epoch * 7 + i // 8 for i in range(50))
        assert [i for _, i in sum(batches, [])] == list(reference)
        assert [len(b) for b in batches] == [8] * 6 + [2]
    assert sampler.epoch == 3  # a pass moves to the next epoch, as accelerate's sampler


def test_length_grouped_batches_are_of_similar_lengths_and_reproducible():
    lengths = [int(x) for x in torch.randint(5, 100, (400,), generator=torch.Generator().manual_seed(1))]
    sampler = training.BatchIndexSampler(400, 16, seed=3, lengths=lengths)
    first = list(sampler)
    sampler.set_epoch(0)
    assert list(sampler) == first
    spread = [max(lengths[i] for _, i in b) - min(lengths[i] for _, i in b) for b in first]
    assert sorted(i for b in first for _, i in b) == list(range(400))
    assert sum(spread) / len(spread) < 20  # random batches of 16 from 5..99 spread ~80


def test_shard_batch_gives_each_process_its_rows_and_label_free_fillers():
    batch = {"input_ids": torch.arange(15).view(5, 3), "attention_mask": torch.ones(5, 3, dtype=torch.long),
             "labels": torch.arange(15).view(5, 3)}  # fmt: skip
    a, b = (training.shard_batch(batch, r, 2) for r in (0, 1))
    assert a["input_ids"].shape == b["input_ids"].shape == (3, 3)
    assert torch.equal(torch.cat([a["input_ids"], b["input_ids"][:2]]), batch["input_ids"])
    assert (b["labels"][2] == -100).all() and torch.equal(b["input_ids"][2], batch["input_ids"][0])
    c = training.shard_batch({k: v[:1] for k, v in batch.items()}, 1, 2)  # fewer rows than processes
    assert c["input_ids"].shape == (1, 3) and (c["labels"] == -100).all()


@pytest.fixture(scope="module")
def rows_and_tokenizer(tmp_path_factory):
    tok = word_level_tokenizer(100)
    g = torch.Generator().manual_seed(0)
    rows = []
    for _ in range(70):
        n = int(torch.randint(3, 20, (1,), generator=g))
        words = torch.randint(1, 3, (n,), generator=g).tolist()
        word_ids = [w for w, k in enumerate(words) for _ in range(k)]
        ids = torch.randint(4, 99, (len(word_ids),), generator=g).tolist()
        rows.append({"input_ids": [0, *ids, 2], "word_ids": [-1, *word_ids, -1],
                     "word_flags": torch.randint(0, 8, (n,), generator=g).tolist()})  # fmt: skip
    return rows, tok


@pytest.mark.parametrize("strategy", ["lem", "standard"])
def test_masks_depend_on_the_batch_index_only_not_on_workers(rows_and_tokenizer, strategy):
    from datasets import Dataset
    from torch.utils.data import DataLoader

    rows, tok = rows_and_tokenizer
    collate = BatchSeededCollator(make_collator(tok, MaskingSettings.from_dict({"strategy": strategy}), 5), 5)
    data = Dataset.from_list(rows)

    def batches(workers: int, epoch: int = 1) -> list[dict]:
        sampler = training.BatchIndexSampler(len(data), 8, seed=5)
        sampler.set_epoch(epoch)
        loader = DataLoader(training.KeyedRows(data, sampler), batch_sampler=sampler, collate_fn=collate,
                            num_workers=workers)  # fmt: skip
        return list(loader)

    main, two = batches(0), batches(2)
    assert len(main) == len(two) == 9
    for x, y in zip(main, two, strict=True):
        assert all(torch.equal(x[k], y[k]) for k in ("input_ids", "attention_mask", "labels"))
    # batch b of epoch 1 is global batch 9 + b; masked alone, it is masked the same
    sampler = training.BatchIndexSampler(len(data), 8, seed=5)
    sampler.set_epoch(1)
    third = list(sampler)[3]
    alone = collate.mask([data[i] for _, i in third], batch_index=third[0][0])
    assert third[0][0] == 12 and torch.equal(alone["labels"], main[3]["labels"])
    with pytest.raises(ValueError, match=BATCH_KEY):
        collate([data[0]])


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> dict[str, Path]:
    return training_world(tmp_path_factory.mktemp("training"))


def train_in_process(tiny, run: Path, callbacks=(), **overrides) -> dict:
    from lem.masking.collate import MaskingSettings as M
    from lem.pretrain import (
        PretrainTrainingSettings,
        fingerprint,
        load_features,
        load_model,
        result_settings,
        train_stage,
    )

    cfg = stage_settings(**overrides)
    model, tok = load_model(tiny["init"])
    train, valid = load_features([tiny["features"]])
    return train_stage(
        model=model, tokenizer=tok, train_ds=train, valid_ds=valid, masking=M.from_dict(cfg["masking"]),
        settings=PretrainTrainingSettings.from_dict(cfg["training"]), out_dir=run / "model", ckpt_dir=run / "ckpt",
        fp=fingerprint(result_settings(cfg)), callbacks=list(callbacks),
    )  # fmt: skip


def test_resumed_across_epochs_with_workers_equals_uninterrupted(tiny, tmp_path):
    """A run resumed in its third epoch, its batches masked in 2 DataLoader workers, ends with the weights of
    the uninterrupted run without workers: the masks come from the batch index, not from a counter."""
    from transformers import TrainerCallback

    straight, resumed = tmp_path / "straight", tmp_path / "resumed"

    class Snapshot(TrainerCallback):  # the checkpoint folder as a run killed after step 20 leaves it
        def on_save(self, args, state, control, **kw):
            if state.global_step == 20:
                shutil.copytree(straight / "ckpt", resumed / "ckpt")

    ref = train_in_process(tiny, straight, callbacks=[Snapshot()])
    assert ref["schedule"]["steps_per_epoch"] == 8 and ref["global_steps"] == 24
    assert (resumed / "ckpt" / "checkpoint-20").is_dir()
    sel = train_in_process(tiny, resumed, dataloader_num_workers=2)
    assert sel["resumed"] and sel["train_loss_steps"] == 24 - 20
    assert [e["eval_loss"] for e in sel["evaluations"]] == pytest.approx(
        [e["eval_loss"] for e in ref["evaluations"]], rel=1e-6
    )
    a, b = weights(straight), weights(resumed)
    assert a.keys() == b.keys() and all(abs(a[k] - b[k]).max() < 1e-6 for k in a)


def test_nproc_and_launch_command(monkeypatch):
    assert training.nproc_per_node(None) == training.nproc_per_node("1") == 1
    assert training.nproc_per_node("4") == 4
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    assert training.nproc_per_node("gpus") == 1
    with pytest.raises(ValueError):
        training.nproc_per_node("0")
    cmd = training.launch_command(["pretrain", "continue", "--out", "x"], 2)
    assert cmd[1:6] == ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "-m"]
    assert cmd[6:] == ["lem.cli", "pretrain", "continue", "--out", "x"]
    monkeypatch.setenv("LOCAL_RANK", "0")
    assert training.relaunch(["pretrain"], 2) is None  # already one of the processes


def test_training_settings_check_the_new_keys():
    from lem.pretrain import PretrainTrainingSettings

    s = PretrainTrainingSettings.from_dict({})
    assert (s.loss_positions, s.dataloader_num_workers, s.group_by_length, s.compile) == (
        "labelled",
        0,
        False,
        "none",
    )
    for bad in ({"loss_positions": "some"}, {"dataloader_num_workers": -1}, {"compile": "yes"},
                {"precision": "fp8"}):  # fmt: skip
        with pytest.raises(ValueError, match="training settings"):
            PretrainTrainingSettings.from_dict(bad)


def test_precision_flags_and_checkpoint_policies():
    assert training.precision_flags("auto", "cpu") == {}
    assert training.precision_flags("bf16", "cpu") == {"fp16": False, "bf16": True}
    with pytest.raises(ValueError):
        training.precision_flags("fp8")
    sched = training.training_schedule(1000, epochs=1, batch_size=32)
    a = training.CheckpointPolicy.scheduled(sched).arguments()
    assert (a["eval_steps"], a["save_total_limit"], a["save_only_model"]) == (sched.eval_every, 2, False)
    b = training.CheckpointPolicy.best_epoch("macro_f1").arguments()
    assert (b["eval_strategy"], b["metric_for_best_model"], b["greater_is_better"]) == (
        "epoch",
        "macro_f1",
        True,
    )
    assert training.CheckpointPolicy.final().arguments() == {"eval_strategy": "no", "save_strategy": "no"}


def test_a_training_log_says_step_of_total_elapsed_tokens_per_second_and_time_left(
    tiny, tmp_path, caplog, capfd
):
    """Every logging_steps a line `step 4/24 (17%), 0s elapsed, 1,234 tokens/s, about 1s left; loss ...`, an
    evaluation in one line; no printed dicts of the Trainer, no progress bar at a save (issue 45)."""
    import logging
    import re

    from lem.core.training.progress import duration, progress_line

    assert duration(42.4) == "42s" and duration(186) == "3m 06s" and duration(3725) == "1h 02m"
    assert (
        progress_line(150, 600, 62, 5612.2, 186)
        == "step 150/600 (25%), 1m 02s elapsed, 5,612 tokens/s, about 3m 06s left"
    )
    with caplog.at_level(logging.INFO, logger="lem.training"):
        train_in_process(tiny, tmp_path / "run")
    lines = [r.getMessage() for r in caplog.records if r.name == "lem.training"]
    steps = [line for line in lines if line.startswith("step ")]
    assert steps and all(
        re.match(r"step \d+/24 \(\d+%\), \d+s elapsed, [\d,]+ tokens/s, about \d+s left; loss ", line)
        for line in steps
    ), steps
    assert [line for line in lines if line.startswith("evaluation at step ")], lines
    out = capfd.readouterr()  # (the harness loads the model before the Trainer exists: its bar may show)
    assert "{'loss'" not in out.out and "Writing model shards" not in out.err
