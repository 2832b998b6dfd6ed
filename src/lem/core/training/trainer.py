"""What every trainer runs through (`lem.core.training`): the settings they share (`TrainingSettings`), the
Hugging Face `TrainingArguments` (`training_arguments`) and `Trainer` (`make_trainer`: batches drawn by a
`BatchIndexSampler`, the labelled-positions loss, evaluations that leave the random generators as they were),
and saving a trained model (`save_model_dir`)."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lem.core.interrupt import checkpoint_on_interrupt
from lem.core.settings import Settings
from lem.core.training.batches import BatchIndexSampler, KeyedRows, RankShard
from lem.core.training.mlm_loss import use_labelled_positions_loss
from lem.core.training.progress import progress_callback, quiet_progress_bars
from lem.core.training.runtime import (
    PRECISIONS,
    pick_device,
    precision_flags,
    rng_state,
    set_rng_state,
    world_size,
)
from lem.core.training.schedule import CheckpointPolicy

# Imported inside functions: torch and transformers (planning imports this package, with the training stages'
# settings, and needs neither)

LOSS_POSITIONS = ("labelled", "all")


# --- the settings every trainer shares ----------------------------------------------------------------------


@dataclass(frozen=True)
class TrainingSettings(Settings):
    """The knobs of every trainer, checked once: the settings of pre-training (`lem.pretrain.PretrainTrainingSettings`),
    sentiment (`lem.sentiment.SentimentSettings`), NER (`lem.annotate.hf_ner.TrainNERSettings`) and NMT
    (`lem.nmt.settings.NMTSettings`) extend it, each keeping its own defaults where they differ (a subclass
    overrides a default). A knob that only some trainers read (max_steps, warmup, max_length, seed) is
    declared by those, so no trainer accepts a key it would ignore."""

    SECTION = "training settings"

    epochs: float = 1.0
    batch_size: int = 32
    learning_rate: float = 5e-5
    weight_decay: float = 0.0
    precision: str = "auto"  # auto (bf16/fp16 autocast on a GPU, fp32 on the CPU) | fp32 | fp16 | bf16

    def validate(self) -> None:
        if self.epochs <= 0:
            raise self.refused("epochs", "a number > 0")
        if self.batch_size < 1:
            raise self.refused("batch_size", "an integer >= 1")
        if self.learning_rate <= 0:
            raise self.refused("learning_rate", "a number > 0")
        if self.weight_decay < 0:
            raise self.refused("weight_decay", "a number >= 0")
        if self.precision not in PRECISIONS:
            raise self.refused("precision", f"one of {PRECISIONS}")


def training_arguments(
    output_dir: str | Path,
    *,
    policy: CheckpointPolicy,
    seed: int,
    batch_size: int,
    learning_rate: float,
    logging_steps: int,
    epochs: float = 1.0,
    max_steps: int = -1,
    eval_batch_size: int | None = None,
    grad_accum: int = 1,
    weight_decay: float = 0.0,
    warmup: float = 0.0,
    scheduler: str = "linear",
    precision: str = "auto",
    device: str = "auto",
    use_cpu: bool = False,
    data_seed: int | None = None,
    remove_unused_columns: bool = True,
    dataloader_num_workers: int = 0,
    compile: bool | str = False,
    average_tokens_across_devices: bool = True,
    no_step_sync: bool = False,
):
    """The Hugging Face TrainingArguments of a training run. `batch_size` and `eval_batch_size` are per
    process; `warmup` is a number of steps, or a share of them when a float below 1; fused AdamW on CUDA
    (the default optimizer elsewhere, adamw_torch_fused with torch >= 2.8, is left as it is). `compile`:
    False / "none", True / "default", or a `torch.compile` mode ("reduce-overhead": CUDA graphs).
    `no_step_sync` (the static path): no host synchronisation per step: the loss is not checked for nan/inf
    on the host at every step (`logging_nan_inf_filter`; the Trainer keeps adding it on the device and reads
    it at logging), and batches are copied to the GPU asynchronously from pinned memory."""
    from transformers import TrainingArguments

    cuda = pick_device(device).startswith("cuda") and not use_cpu
    if not cuda and world_size() > 1:
        # accelerate makes CPU processes data-parallel (gloo) only when told they are on the CPU
        use_cpu = True
    extra: dict[str, Any] = {
        "dataloader_pin_memory": cuda,  # pinned host memory means nothing without a GPU
        "ddp_find_unused_parameters": False,  # every parameter takes part: no extra graph traversal per step
    }
    if cuda:
        extra["optim"] = "adamw_torch_fused"
    if dataloader_num_workers > 0:
        extra["dataloader_persistent_workers"] = True  # no new worker processes at every epoch and evaluation
    mode = compile_mode(compile)
    if mode != "none":
        extra.update(torch_compile=True, torch_compile_mode=mode)
    if no_step_sync:
        extra["logging_nan_inf_filter"] = False
        if cuda:
            extra["accelerator_config"] = {"non_blocking": True}
    return TrainingArguments(
        output_dir=str(output_dir),
        num_train_epochs=epochs,
        max_steps=max_steps,
        per_device_train_batch_size=batch_size,
        per_device_eval_batch_size=eval_batch_size or batch_size,
        gradient_accumulation_steps=grad_accum,
        learning_rate=learning_rate,
        weight_decay=weight_decay,
        warmup_steps=warmup,
        lr_scheduler_type=scheduler,
        logging_steps=logging_steps,
        seed=seed,
        data_seed=data_seed,
        report_to="none",
        disable_tqdm=True,
        remove_unused_columns=remove_unused_columns,
        dataloader_num_workers=dataloader_num_workers,
        use_cpu=use_cpu,
        average_tokens_across_devices=average_tokens_across_devices,
        **policy.arguments(),
        **precision_flags(precision, "cpu" if use_cpu else device),
        **extra,
    )


COMPILE_MODES = ("none", "default", "reduce-overhead")


def compile_mode(value: bool | str) -> str:
    """`training.compile` as a `torch.compile` mode or "none" (a boolean of older configs: false = none,
    true = default)."""
    mode = {False: "none", True: "default"}.get(value, value) if isinstance(value, bool) else value
    if mode not in COMPILE_MODES:
        raise ValueError(f"compile {value!r} not in {COMPILE_MODES}")
    return mode


# --- the Trainer ------------------------------------------------------------------------------------------


@functools.cache
def _trainer_class():
    from torch.utils.data import DataLoader
    from transformers import Trainer
    from transformers.trainer_utils import seed_worker

    class LemTrainer(Trainer):
        """The HF Trainer, drawing its training batches from a `BatchIndexSampler` when given one."""

        def __init__(self, *args, train_batches: BatchIndexSampler | None = None, rng_neutral_eval: bool = False,
                     **kwargs):  # fmt: skip
            self.train_batches = train_batches
            self.rng_neutral_eval = rng_neutral_eval
            self.tokens_seen = None  # input tokens of this process, a device tensor read at log lines only
            super().__init__(*args, **kwargs)

        def training_step(self, model, inputs, *args, **kwargs):
            mask = inputs.get("attention_mask") if isinstance(inputs, dict) else None
            if mask is not None and getattr(mask, "dim", lambda: 0)() == 2:
                n = mask.sum()  # added on the device: no host synchronisation per step
                self.tokens_seen = n if self.tokens_seen is None else self.tokens_seen + n
            return super().training_step(model, inputs, *args, **kwargs)

        def evaluate(self, *args, **kwargs):
            if not self.rng_neutral_eval:
                return super().evaluate(*args, **kwargs)
            state = rng_state()  # an evaluation draws from the global generators (a DataLoader's base seed)
            try:
                return super().evaluate(*args, **kwargs)
            finally:
                set_rng_state(state)

        def get_train_dataloader(self):
            if self.train_batches is None:
                return super().get_train_dataloader()
            a = self.args
            params: dict[str, Any] = {
                "batch_sampler": self.train_batches,
                "collate_fn": RankShard(self.data_collator, a.process_index, a.world_size),
                "num_workers": a.dataloader_num_workers,
                "pin_memory": a.dataloader_pin_memory,
            }
            if a.dataloader_num_workers > 0:
                params.update(
                    persistent_workers=a.dataloader_persistent_workers,
                    prefetch_factor=a.dataloader_prefetch_factor,
                    multiprocessing_context=a.dataloader_multiprocessing_context,
                    worker_init_fn=functools.partial(seed_worker, num_workers=a.dataloader_num_workers, rank=a.process_index),
                )  # fmt: skip
            dataset = KeyedRows(self.train_dataset, self.train_batches)
            loader = self.accelerator.prepare(DataLoader(dataset, **params))
            # accelerate deals the batches of a multi-process run round-robin (BatchSamplerShard); every
            # process takes the whole global batch here, and RankShard its rows: make the wrapper a
            # passthrough, as the Trainer does for its own rank-aware sampler.
            wrapper = getattr(loader, "batch_sampler", None)
            if wrapper is not None and getattr(wrapper, "batch_sampler", None) is self.train_batches:
                wrapper.num_processes = 1
                wrapper.process_index = 0
            return loader

    return LemTrainer


def make_trainer(
    *,
    model,
    args,
    train_dataset,
    data_collator,
    tokenizer,
    eval_dataset=None,
    callbacks: Sequence = (),
    compute_metrics=None,
    train_batches: BatchIndexSampler | None = None,
    loss_positions: str = "all",
    rng_neutral_eval: bool = False,
    static_positions: bool = False,
):
    """The Trainer of a training run. `loss_positions="labelled"`: a masked LM's loss on the labelled
    positions only (`use_labelled_positions_loss`), normalised over the whole (accumulated, global) batch;
    `"all"`: the model's own loss, averaged over gradient-accumulation steps. `rng_neutral_eval`: every
    evaluation leaves the random generators as it found them, so evaluating does not change the training
    (dropout draws) that follows it. `static_positions`: the batches are `lem.masking.collate.static_batch`'s
    (labelled positions in a fixed-size buffer), the loss `gathered_positions_loss` (needs "labelled")."""
    if loss_positions not in LOSS_POSITIONS:
        raise ValueError(f"loss_positions {loss_positions!r} not in {LOSS_POSITIONS}")

    if static_positions and loss_positions != "labelled":
        raise ValueError("static_positions needs loss_positions='labelled'")
    labelled = loss_positions == "labelled" and use_labelled_positions_loss(model, static=static_positions)
    if static_positions and not labelled:
        raise ValueError(f"static_positions: {type(model).__name__} has no encoder + lm_head")
    trainer = _trainer_class()(
        model=model,
        args=args,
        train_dataset=train_dataset,
        eval_dataset=eval_dataset,
        data_collator=data_collator,
        processing_class=tokenizer,
        compute_metrics=compute_metrics,
        callbacks=[
            *callbacks,
            checkpoint_on_interrupt(),
        ],  # Ctrl-C: a checkpoint, then stop (lem.core.interrupt)
        train_batches=train_batches,
        rng_neutral_eval=rng_neutral_eval,
    )
    # the log: a progress line every logging_steps (step of total, elapsed, tokens/s, time left), no printed
    # dicts, no progress bars (lem.core.training.progress)
    from transformers.trainer_callback import PrinterCallback

    quiet_progress_bars()
    trainer.remove_callback(PrinterCallback)
    trainer.add_callback(progress_callback(trainer))
    # labelled: the loss is divided by the labelled positions of all accumulated batches of the step
    # (num_items_in_batch); all: each batch's own mean, which the Trainer divides by the accumulation steps
    trainer.model_accepts_loss_kwargs = labelled or trainer.model_accepts_loss_kwargs
    trainer.loss_is_scaled_for_ga = labelled
    return trainer


# --- saving -----------------------------------------------------------------------------------------------


def save_model_dir(directory: str | Path, model, tokenizer, args=None) -> None:
    """Write a trained model into `directory`: weights as safetensors, config, tokenizer, and the training
    arguments as `training_args.json` (Trainer.save_model would add a pickled training_args.bin)."""
    quiet_progress_bars()  # no "Writing model shards" bar in the job's log
    directory = Path(directory)
    model = getattr(model, "module", model)  # DDP
    model = getattr(model, "_orig_mod", model)  # torch.compile
    model.save_pretrained(str(directory), safe_serialization=True)
    if tokenizer is not None:
        tokenizer.save_pretrained(str(directory))
    if args is not None:
        (directory / "training_args.json").write_text(arguments_json(args, directory), encoding="utf-8")


def arguments_json(args, directory: Path) -> str:
    """The training arguments as `TrainingArguments.to_json_string` writes them, but for an `output_dir` inside
    the model's folder `directory`, written relative to it: a job that trains in its staging folder (a random
    name, renamed into place when it ends) writes the same bytes each time it runs."""
    fields = args.to_dict()
    try:
        fields["output_dir"] = (
            Path(fields["output_dir"]).resolve().relative_to(directory.resolve()).as_posix()
        )
    except (KeyError, TypeError, ValueError):  # no output_dir, or one outside the model's folder: as it is
        pass
    return json.dumps(fields, indent=2)


def write_json_lines(path: str | Path, records: Sequence[dict]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r) + "\n")
