"""Training, for every stage that trains: pre-training (`lem.pretrain`), sentiment (`lem.sentiment`), NER
(`lem.annotate.hf_ner`) and NMT (`lem.nmt`).

One place owns what they share:
- the settings every trainer has (`TrainingSettings`: epochs, batch_size, learning_rate, weight_decay,
  precision), which each trainer's settings extend with its own defaults;
- device, precision, threads and seeds (`pick_device`, `precision_flags`, `set_threads`, `seed_everything`);
- the checkpoint policy (`CheckpointPolicy`): pre-training evaluates and saves on the `Schedule` derived
  from the stage's real step count (`training_schedule`) and keeps the best and the last checkpoints;
  sentiment and NER evaluate every epoch and end with the best epoch by their validation metric;
- the Hugging Face `TrainingArguments` (`training_arguments`) and `Trainer` (`make_trainer`);
- saving a trained model (`save_model_dir`): safetensors, the tokenizer, the training arguments as JSON
  (never a pickled training_args.bin).

And what makes masked-LM training fast and reproducible:
- the masked-LM loss on the labelled positions only (`loss_positions: labelled`): the encoder's hidden
  states of the positions with a label are gathered *before* the LM head, so the head (hidden x 250k for
  XLM-R) runs on ~15 % of the positions; cross-entropy in float32, the same mean over labelled positions
  as the full head's loss;
- the static step (`gathered_positions_loss`, with `lem.masking.collate.static_batch`'s batches, on a GPU by
  default: `lem.pretrain.PretrainTrainingSettings.static_shapes`): every batch the same shape, the labelled positions
  in a fixed-size per-row buffer, the 4-D padding mask, no host synchronisation per step (`no_step_sync`),
  so `torch.compile` (`compile_mode`, "reduce-overhead": CUDA graphs) captures one graph; the same loss;
- training batches drawn by `BatchIndexSampler`: each batch carries its global index (epoch x batches per
  epoch + position), from which the masking seed derives (`lem.masking.collate.BatchSeededCollator`), so masks do
  not depend on DataLoader workers, on a resume, or on the number of processes;
- data parallelism (torchrun): `batch_size` is the global batch; every process draws the same global batch,
  masks it whole and keeps its share of the rows (`RankShard`), and the loss is normalised by the labelled
  positions of the whole global batch, so N processes take the same optimizer steps on the same batches
  with the same masks as one process (up to float summation order, and dropout's per-process randomness).

The package holds them by concern: `runtime` (device, precision, threads, seeds, RNG state), `schedule` (the
schedule and the checkpoint policy), `batches` (batches keyed by their global index, data-parallel shards),
`mlm_loss` (the labelled-positions loss), `launch` (torchrun), `trainer` (the settings, the TrainingArguments,
the Trainer, saving) and `checkpoints` (a pre-training stage's checkpoint folders and the checked choice
among them); every name above is `lem.core.training.X` too.
"""

from __future__ import annotations

from lem.core.training.batches import (
    BATCH_KEY,
    BatchIndexSampler,
    KeyedRows,
    RankShard,
    row_lengths,
    shard_batch,
)
from lem.core.training.launch import launch_command, nproc_per_node, relaunch
from lem.core.training.mlm_loss import (
    gathered_positions_loss,
    labelled_positions_loss,
    restore_forward,
    supports_labelled_positions,
    use_labelled_positions_loss,
)
from lem.core.training.runtime import (
    PRECISIONS,
    pick_device,
    precision_flags,
    rng_state,
    seed_everything,
    set_rng_state,
    set_threads,
    world_size,
)
from lem.core.training.schedule import (
    KEPT_CHECKPOINTS,
    CheckpointPolicy,
    Schedule,
    scheduled_evaluation_callback,
    steps_per_epoch,
    training_schedule,
)
from lem.core.training.trainer import (
    COMPILE_MODES,
    LOSS_POSITIONS,
    TrainingSettings,
    compile_mode,
    make_trainer,
    save_model_dir,
    training_arguments,
    write_json_lines,
)

__all__ = [
    "BATCH_KEY",
    "COMPILE_MODES",
    "KEPT_CHECKPOINTS",
    "LOSS_POSITIONS",
    "PRECISIONS",
    "BatchIndexSampler",
    "CheckpointPolicy",
    "KeyedRows",
    "RankShard",
    "Schedule",
    "TrainingSettings",
    "compile_mode",
    "gathered_positions_loss",
    "labelled_positions_loss",
    "launch_command",
    "make_trainer",
    "nproc_per_node",
    "pick_device",
    "precision_flags",
    "relaunch",
    "restore_forward",
    "rng_state",
    "row_lengths",
    "save_model_dir",
    "scheduled_evaluation_callback",
    "seed_everything",
    "set_rng_state",
    "set_threads",
    "shard_batch",
    "steps_per_epoch",
    "supports_labelled_positions",
    "training_arguments",
    "training_schedule",
    "use_labelled_positions_loss",
    "world_size",
    "write_json_lines",
]
