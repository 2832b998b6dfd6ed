"""`lem pretrain base` (a tiny model from scratch, standard MLM) and `lem pretrain continue` (a variant's stage
from `--init`): the same training stage (`lem.pretrain.stage.train_stage`), different starting points; with
`--nproc-per-node`, relaunched under torchrun first."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from lem.core.files import content_digest
from lem.core.stage import Stage, Verb, arg
from lem.core.training import nproc_per_node, relaunch, set_threads
from lem.core.training.checkpoints import fingerprint
from lem.pretrain.model import load_model, new_model
from lem.pretrain.settings import ScratchSettings, StageSettings, result_settings
from lem.pretrain.stage import load_features, train_stage

# Imported inside functions: transformers (`lem pretrain --help` needs no transformers)


def run(args: argparse.Namespace) -> int:
    """`lem pretrain base` (a tiny model from scratch, standard MLM) or `lem pretrain continue` (a
    variant's stage from `--init`): the same training stage, different starting points."""
    from transformers import AutoTokenizer

    cfg: StageSettings = args.settings
    train, masking = cfg.training, cfg.masking
    if args.verb == "base":
        tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
        model = new_model(tokenizer, cfg.model, train.seed)  # type: ignore[attr-defined]
        init, stage = "random (from scratch)", "base"
    else:
        model, tokenizer = load_model(args.init)
        init, stage = str(args.init), args.stage
    train_ds, valid_ds = load_features(args.features)
    # Checkpoints belong to what the run starts from, not to path names: a base model retrained under
    # other settings, or features rebuilt from other text, sit at the same paths with other content.
    start = [args.tokenizer] if args.verb == "base" else [args.init]
    fp = fingerprint(
        {
            "cmd": args.verb,
            "cfg": result_settings(cfg.to_dict()),
            "init": init,
            "start_content": content_digest(start),
            "features_content": content_digest(args.features),
        }
    )
    train_stage(
        model=model,
        tokenizer=tokenizer,
        train_ds=train_ds,
        valid_ds=valid_ds,
        masking=masking,
        settings=train,
        out_dir=Path(args.out),
        ckpt_dir=Path(args.checkpoints),
        fp=fp,
        extra_selection={"init": init, "stage": stage},
    )
    return 0


NPROC_HELP = (
    "data-parallel processes (torchrun, one node): a number, or `gpus` for one per visible GPU "
    "(default: $LEM_NPROC_PER_NODE, else 1); the training settings' batch_size is shared between them"
)


def cmd_train(args: argparse.Namespace, argv: list[str]) -> int:
    """Relaunch under torchrun when asked for several processes; then train (`run`) in this process."""
    status = relaunch(["pretrain", *argv], nproc_per_node(args.nproc_per_node))
    if status is not None:
        return status
    world = int(os.environ.get("WORLD_SIZE", "1"))
    set_threads(max(1, args.threads // world) if args.threads else None)  # --threads: the job's, shared
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    return run(args)


COMMON = (
    arg("--features", nargs="+", required=True),
    arg("--checkpoints", required=True, help="folder for resumable checkpoints (kept across restarts)"),
    arg("--out", required=True),
    arg("--threads", type=int, default=None, help="torch threads (of the job, shared by its processes)"),
    arg("--nproc-per-node", default=os.environ.get("LEM_NPROC_PER_NODE", "1"), help=NPROC_HELP),
)
STAGE = Stage(
    "pretrain",
    "Pre-training: the tiny base model from scratch, and continual pre-training (stage mono, then para).",
    (
        Verb("base", "pre-train a tiny XLM-R-architecture model from scratch (standard MLM)", cmd_train, (
            arg("--tokenizer", required=True),
            *COMMON,
        ), settings=ScratchSettings, settings_required=True, argv_run=True),
        Verb("continue", "continual pre-training stage (mono or para) of a variant", cmd_train, (
            arg("--init", required=True, help="model folder to start from"),
            arg("--stage", required=True, choices=["mono", "para"]),
            *COMMON,
        ), settings=StageSettings, settings_required=True, argv_run=True),
    ),
)  # fmt: skip
