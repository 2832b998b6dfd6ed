"""The size of the models that train: parameters and tokenizer bytes, from the base model's files, its config or a
known architecture."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lem.plan.config import KNOWN_HUB, TOKENIZER_BYTES_PER_ID, PlanError
from lem.pretrain import ModelSettings
from lem.run import Run, paths
from lem.stand_in import SIZES, xlmr_mlm_parameters

# --- the model ----------------------------------------------------------------------------------------------


def base_folder(config: dict[str, Any], root: Path) -> Path:
    """The base model's folder under `root` (lem.run.Run.base_model_dir: the first seed's when trained from
    scratch)."""
    folder = Run(config).base_model_dir()
    if folder is None:
        raise PlanError("base_model: `source: pretrained` needs `path` or `hub` ({repo, revision})")
    return root / folder


def safetensors_parameters(path: Path) -> int:
    """Parameters stored in a safetensors file (its JSON header only is read)."""
    with path.open("rb") as f:
        size = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(size))
    return sum(math.prod(t["shape"]) for k, t in header.items() if k != "__metadata__")


def tokenizer_vocab(folder: Path) -> int | None:
    path = folder / "tokenizer.json"
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    return len(data["model"]["vocab"]) + sum(
        1 for t in data.get("added_tokens", []) if t["id"] >= len(data["model"]["vocab"])
    )


@dataclass
class ModelSize:
    parameters: int
    tokenizer_bytes: int
    source: str  # how the size was found
    name: str


def model_size(config: dict[str, Any], root: Path) -> ModelSize:
    """Parameters of the models that train (all variants start from the base model, so all share them)."""
    bm = config["base_model"]
    folder = base_folder(config, root)
    tok_files = [p for p in folder.glob("*") if p.name.startswith(("tokenizer", "sentencepiece", "special"))]
    tok_bytes = sum(p.stat().st_size for p in tok_files if p.is_file())
    weights = folder / "model.safetensors"
    if weights.is_file():
        return ModelSize(safetensors_parameters(weights), tok_bytes, f"{weights} (header)", str(folder))
    if bm["source"] == "scratch":
        arch = ModelSettings.from_dict(bm.get("model"))
        trained_vocab = None
        if config["tokenizer"]["source"] == "train":
            trained_vocab = tokenizer_vocab(root / paths.TOKENIZER)
        vocab = trained_vocab or int(config["tokenizer"]["vocab_size"])
        how = paths.TOKENIZER if trained_vocab else "tokenizer.vocab_size (no tokenizer trained yet)"
        positions = int(config["pretrain"]["max_length"]) + 2  # built for pretrain.max_length (pretrain_base)
        params = xlmr_mlm_parameters(
            vocab, arch.hidden_size, arch.num_hidden_layers, arch.intermediate_size, positions
        )
        return ModelSize(
            params, vocab * TOKENIZER_BYTES_PER_ID, f"base_model.model, vocabulary of {how}", "scratch"
        )
    if bm["source"] == "stand_in":
        size = bm["stand_in"]["size"]
        arch = dict(SIZES[size])
        vocab = arch.pop("vocab_size") or int(bm["stand_in"]["vocab_size"])
        tok = int(bm["stand_in"]["vocab_size"]) * TOKENIZER_BYTES_PER_ID
        return ModelSize(
            xlmr_mlm_parameters(vocab, **arch), tok, f"lem.stand_in.SIZES[{size!r}]", f"stand-in {size}"
        )
    config_json = folder / "config.json"
    if config_json.is_file():
        cfg = json.loads(config_json.read_text(encoding="utf-8"))
        if cfg.get("model_type") not in ("xlm-roberta", "roberta"):
            raise PlanError(f"{config_json}: cannot size model_type {cfg.get('model_type')!r}")
        return ModelSize(xlmr_mlm_parameters(**cfg), tok_bytes, str(config_json), str(folder))
    repo = (bm.get("hub") or {}).get("repo")
    if repo in KNOWN_HUB:
        arch = dict(SIZES[KNOWN_HUB[repo]])
        vocab = arch.pop("vocab_size")
        return ModelSize(
            xlmr_mlm_parameters(vocab, **arch), vocab * TOKENIZER_BYTES_PER_ID, f"{repo}'s architecture", repo
        )
    raise PlanError(
        f"cannot size the base model: {folder} has no model.safetensors or config.json yet and "
        f"{repo or bm.get('path')!r} is not a known architecture; fetch it first"
    )
