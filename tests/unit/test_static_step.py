"""The static training step (`training.static_shapes`): every batch padded to the stage's length, the labelled
positions gathered into a fixed-size buffer (`lem.masking.collate.static_batch`), the loss computed on them
(`lem.core.training.gathered_positions_loss`). On the CPU it must give the eager path's loss and gradients on
the same batches, and a small training run must select the same checkpoint (tests/dag/test_static_step_run.py)."""

from __future__ import annotations

import pytest
import torch
from support.static_step import feature_rows, tiny_mlm, tokenizer

from lem.core import training
from lem.masking.collate import (
    BatchSeededCollator,
    MaskingSettings,
    make_collator,
    masked_capacity,
    round_up,
    static_batch,
)


@pytest.mark.parametrize("strategy", ["lem", "standard"])
def test_static_batch_holds_every_labelled_position_once(strategy):
    settings = MaskingSettings.for_variant("lem" if strategy == "lem" else "mlm_tlm")
    tok = tokenizer()
    collate = BatchSeededCollator(make_collator(tok, settings, 3), 3)
    rows = feature_rows(12, 6, 30, seed=1)
    batch = collate.mask(rows, 0)
    length = round_up(30 + 3)
    capacity = masked_capacity(settings, length)
    out = static_batch(batch, length, capacity, tok.pad_token_id, rows=16)
    assert out["input_ids"].shape == out["attention_mask"].shape == (16, length)
    assert out["labels"].shape == out["masked_positions"].shape == (16, capacity)
    for i in range(12):
        want = {int(p): int(batch["labels"][i, p]) for p in torch.nonzero(batch["labels"][i] != -100)}
        valid = out["labels"][i] != -100
        got = dict(
            zip(out["masked_positions"][i][valid].tolist(), out["labels"][i][valid].tolist(), strict=True)
        )
        assert got == want and len(want) <= capacity
    w = batch["input_ids"].shape[1]
    assert torch.equal(out["input_ids"][:12, :w], batch["input_ids"])
    assert (out["input_ids"][:12, w:] == tok.pad_token_id).all() and (
        out["attention_mask"][:12, w:] == 0
    ).all()
    assert (out["labels"][12:] == -100).all()  # filled rows carry no labels
    assert int((out["labels"] != -100).sum()) == int((batch["labels"] != -100).sum())


def test_capacity_is_the_lem_budgets_maximum_and_a_larger_row_grows_the_buffer():
    lem = MaskingSettings.for_variant("lem")
    # non_special: at most 128 - 2 = 126 counted tokens, floor(126 * 0.15 + 0.5) = 19 positions, exactly
    assert masked_capacity(lem, 128) == 19
    authors = MaskingSettings.for_variant("lem", count_rule="all_tokens", rounding="half_even")
    assert masked_capacity(authors, 128) == round(128 * 0.15) == 19
    standard = MaskingSettings.for_variant("mlm_tlm")
    assert masked_capacity(standard, 128) == 40  # 19.2 + 4 x 4.04 = 35.4, rounded up to 8
    labels = torch.full((2, 10), -100)
    labels[0, :9] = 7
    batch = {"input_ids": torch.ones(2, 10, dtype=torch.long), "attention_mask": torch.ones(2, 10, dtype=torch.long),
             "labels": labels}  # fmt: skip
    out = static_batch(batch, 16, 8, pad_id=1)
    assert out["labels"].shape == (2, 16) and int((out["labels"] != -100).sum()) == 9  # nothing dropped
    with pytest.raises(ValueError, match="does not fit the static length 8"):
        static_batch(batch, 8, 8, pad_id=1)


def test_the_gathered_loss_is_the_eager_loss_and_gradients_on_the_same_batches():
    tok = tokenizer()
    collate = BatchSeededCollator(make_collator(tok, MaskingSettings.for_variant("lem"), 5), 5)
    for b in range(2):
        rows = feature_rows(8, 8, 40, seed=10 + b)
        batch = collate.mask(rows, b)
        eager, static = tiny_mlm(), tiny_mlm()
        assert training.use_labelled_positions_loss(eager)
        assert training.use_labelled_positions_loss(static, static=True)
        ref = eager(**batch)
        ref.loss.backward()
        length = 48
        sb = static_batch(
            batch, length, masked_capacity(MaskingSettings.for_variant("lem"), length), 1, rows=10
        )
        out = static(**sb)
        out.loss.backward()
        assert out.loss.item() == pytest.approx(ref.loss.item(), rel=1e-5)
        grads = dict(static.named_parameters())
        for name, p in eager.named_parameters():
            assert torch.allclose(p.grad, grads[name].grad, rtol=1e-4, atol=1e-6), name
        # normalised by a count from outside (accumulated batches, other processes), as the eager loss
        n = torch.tensor(3 * int((batch["labels"] != -100).sum()))
        assert static(**sb, num_items_in_batch=n).loss.item() == pytest.approx(
            eager(**batch, num_items_in_batch=n).loss.item(), rel=1e-5
        )


def test_static_shapes_settings():
    from lem.pretrain import PretrainTrainingSettings, use_static_shapes

    s = PretrainTrainingSettings.from_dict({})
    assert (s.static_shapes, s.compile) == ("auto", "none")
    assert not use_static_shapes(s, "cpu") and use_static_shapes(s, "cuda")  # CPU defaults: the eager path
    assert not use_static_shapes(PretrainTrainingSettings.from_dict({"loss_positions": "all"}), "cuda")
    assert use_static_shapes(PretrainTrainingSettings.from_dict({"static_shapes": "on"}), "cpu")
    assert (
        PretrainTrainingSettings.from_dict({"compile": True}).compile == "default"
    )  # older configs' boolean
    for bad in ({"static_shapes": "yes"}, {"compile": "max"}, {"static_shapes": "on", "loss_positions": "all"},
                {"compile": "reduce-overhead", "static_shapes": "off"}):  # fmt: skip
        with pytest.raises(ValueError, match="training settings"):
            PretrainTrainingSettings.from_dict(bad)
    args = training.training_arguments("/tmp/x", policy=training.CheckpointPolicy.final(), seed=1, batch_size=4,
                                       learning_rate=1e-3, logging_steps=5, device="cpu", compile="reduce-overhead",
                                       no_step_sync=True)  # fmt: skip
    assert (args.torch_compile, args.torch_compile_mode, args.logging_nan_inf_filter) == (
        True,
        "reduce-overhead",
        False,
    )


def test_the_static_length_stays_inside_the_position_table():
    from lem.pretrain import static_length

    model = tiny_mlm()  # 66 positions
    assert static_length(30, model) == 32 and static_length(64, model) == 64
    assert static_length(61, model) == 64 and static_length(63, model) == 64  # rounded up to 8 where it fits
    small = type("M", (), {"config": type("C", (), {"max_position_embeddings": 43})()})()
    assert static_length(41, small) == 43 and static_length(43, small) == 43  # not past the table
