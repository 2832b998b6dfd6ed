"""Checks against the base model: its positions and architecture (known at planning for a scratch or stand-in
model, read from its config.json once a folder exists), the lengths and dimensions the config asks of it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, NamedTuple

from lem.config_check.errors import ConfigError
from lem.config_check.sections import SECTION
from lem.run import Run
from lem.stand_in import SIZES


def base_model_folder(config: dict[str, Any]) -> str | None:
    """The folder of a base model that is not trained in the run (lem.run.Run.base_model_dir); None for a
    model trained from scratch (its facts are the config's)."""
    run = Run(config)
    return None if run.scratch else run.base_model_dir()


def _stand_in_architecture(config: dict[str, Any]) -> dict[str, Any] | None:
    """A stand-in base model's architecture before it is built (lem.stand_in.SIZES: known at planning), with
    `where` naming it; None for any other source."""
    bm = config.get("base_model") or {}
    if bm.get("source") != "stand_in":
        return None

    size = (bm.get("stand_in") or {}).get("size", "base")
    if size not in SIZES:
        return None
    return {**SIZES[size], "where": f"base_model.stand_in.size {size} (lem.stand_in.SIZES)"}


def model_positions(config: dict[str, Any]) -> tuple[int, str] | None:
    """Tokens per sequence the base model takes (its positions less the two XLM-R reserves) and where that
    comes from; None when unknown here (a pretrained or stand-in model not fetched or built yet)."""
    pretrain = config.get("pretrain") or {}
    folder = base_model_folder(config)
    if folder is None:
        n = pretrain.get("max_length", 100)
        return n, f"the scratch base model is built for pretrain.max_length = {n}"
    path = Path(folder) / "config.json"
    try:
        positions = json.loads(path.read_text(encoding="utf-8"))["max_position_embeddings"]
    except (OSError, ValueError, KeyError, TypeError):
        arch = _stand_in_architecture(config)
        if arch is None:
            return None  # not there yet (or not a model config): the training job reports it
        positions, path = arch["max_position_embeddings"], arch["where"]
    if isinstance(positions, bool) or not isinstance(positions, int):
        return None
    return positions - 2, f"{path}: max_position_embeddings {positions} - 2"


class ModelShape(NamedTuple):
    """What the base model's architecture fixes for the settings of later stages."""

    layers: int  # transformer layers (hidden states: layers + 1, the embeddings first)
    hidden: int  # hidden size: the dimension of a sentence embedding (mean or CLS pooling)
    heads: int
    where: str  # where these come from, for a message


def model_shape(config: dict[str, Any]) -> ModelShape | None:
    """The base model's layers, hidden size and heads: `base_model.model` (over lem.pretrain.ModelSettings'
    defaults) for a scratch model, its `config.json` once a pretrained or stand-in model's folder exists;
    None before that (or when the section itself is refused: its own check says so)."""
    folder = base_model_folder(config)
    if folder is None:
        model = (config.get("base_model") or {}).get("model") or {}
        defaults = {f.name: f.default for f in dataclasses.fields(SECTION["base_model.model"].cls)}
        values = [
            model.get(k, defaults[k]) for k in ("num_hidden_layers", "hidden_size", "num_attention_heads")
        ]
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in values):
            return None
        return ModelShape(*values, "base_model.model")
    path: Path | str = Path(folder) / "config.json"
    try:
        cfg = json.loads(Path(path).read_text(encoding="utf-8"))
        values = [cfg[k] for k in ("num_hidden_layers", "hidden_size", "num_attention_heads")]
    except (OSError, ValueError, KeyError, TypeError):
        cfg = _stand_in_architecture(config)
        if cfg is None:
            return None  # not there yet (or not a model config): the job that loads it reports it
        values, path = (
            [cfg[k] for k in ("num_hidden_layers", "hidden_size", "num_attention_heads")],
            cfg["where"],
        )
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in values):
        return None
    return ModelShape(*values, str(path))


def _check_model_shape(config: dict[str, Any]) -> None:
    """What the base model's architecture allows: heads divide the hidden size (scratch model),
    `embedding.layer` is one of its hidden states, `mining.settings.pq_m` (index ivfpq) divides the
    embedding dimension. Before, each failed only at its job, after the training before it (a traceback
    from transformers or a FAISS assertion)."""
    shape = model_shape(config)
    if shape is None:
        return
    if shape.where == "base_model.model" and shape.hidden % shape.heads:
        raise ConfigError(
            f"base_model.model.num_attention_heads: {shape.heads} does not divide hidden_size {shape.hidden}; "
            "expected a divisor of it (each head takes hidden_size / num_attention_heads)"
        )
    layer = (config.get("embedding") or {}).get("layer")
    n_hidden = shape.layers + 1
    if isinstance(layer, int) and not isinstance(layer, bool) and not -n_hidden <= layer < n_hidden:
        raise ConfigError(
            f"embedding.layer: {layer}: the base model has {shape.layers} layers ({shape.where}), so hidden "
            f"states 0..{n_hidden - 1} (0: the embeddings; -1: the last, down to -{n_hidden})"
        )


LASER_DIM = 1024  # LASER3's sentence embeddings (lem.reference, backend laser)


def _check_pq_m(config: dict[str, Any]) -> None:
    """`mining.settings.pq_m` (index ivfpq) divides the dimension of every row that is mined: the base model's
    hidden size (when known), `controls.dim` (a control row), LASER's 1024 (a laser reference encoder)."""
    mining = (config.get("mining") or {}).get("settings") or {}
    pq_m = mining.get("pq_m", 64)
    if mining.get("index") != "ivfpq" or not isinstance(pq_m, int) or isinstance(pq_m, bool) or pq_m < 1:
        return
    dims: list[tuple[int, str]] = []
    shape = model_shape(config)
    if shape is not None:
        dims.append((shape.hidden, f"the hidden size, {shape.where}"))
    controls = config.get("controls") or {}
    if controls.get("lexical") or controls.get("random"):
        dims.append((controls.get("dim", 256), "controls.dim, the control rows"))
    for name, spec in (config.get("reference_encoders") or {}).items():
        settings = (spec or {}).get("settings") or {}
        if (spec or {}).get("enabled", True) and settings.get("backend") == "laser":
            dims.append((LASER_DIM, f"LASER3's, reference_encoders.{name}"))
    for dim, where in dims:
        if isinstance(dim, int) and dim % pq_m:
            raise ConfigError(
                f"mining.settings.pq_m: {pq_m} does not divide the embedding dimension {dim} ({where}); expected a "
                "divisor of it (index ivfpq splits each vector into pq_m parts)"
            )


def _folder_positions(folder: str) -> tuple[int, str] | None:
    """Tokens per sequence of the model in `folder` (its positions less XLM-R's two reserves), when its
    config.json is there."""
    path = Path(folder) / "config.json"
    try:
        positions = json.loads(path.read_text(encoding="utf-8"))["max_position_embeddings"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if isinstance(positions, bool) or not isinstance(positions, int):
        return None
    return positions - 2, f"{path}: max_position_embeddings {positions} - 2"


def _written(written: dict[str, Any] | None, path: str) -> bool:
    """Whether the config as the user wrote it (before the schema's defaults) sets dotted key `path`; True
    when that config is not known."""
    if written is None:
        return True
    node: Any = written
    for seg in path.split("."):
        if not isinstance(node, dict) or seg not in node:
            return False
        node = node[seg]
    return True


def _check_lengths(config: dict[str, Any], written: dict[str, Any] | None = None) -> None:
    """embedding.max_length, pretrain.max_length, (when set) sentiment.training.max_length and the NER
    model's max_length fit the positions of the model they are used with (a set sentiment length beyond
    them was capped without a word; a NER length beyond them failed in `train_ner` with an index error).
    A value the config does not set is named as the default it is."""
    known = model_positions(config)
    embed_default = {f.name: f.default for f in dataclasses.fields(SECTION["embedding"].cls)}["max_length"]
    embedding = config.get("embedding") or {}
    lengths: list[tuple[str, Any, bool, tuple[int, str] | None]] = [
        ("pretrain.max_length", (config.get("pretrain") or {}).get("max_length", 100), True, known),
        (
            "embedding.max_length",
            embedding.get("max_length", embed_default),
            "max_length" in embedding and _written(written, "embedding.max_length"),
            known,
        ),
        (
            "sentiment.training.max_length",
            ((config.get("sentiment") or {}).get("training") or {}).get("max_length"),
            True,
            known,
        ),
    ]
    ner = config.get("ner_model")
    if isinstance(ner, dict):
        settings = ner.get("settings") or {}
        ner_default = {f.name: f.default for f in dataclasses.fields(SECTION["ner_model.settings"].cls)}
        base = ner.get("base", "base_model")
        limit = known if base == "base_model" else _folder_positions(str(base))
        value = settings.get("max_length", ner_default["max_length"])
        lengths.append(("ner_model.settings.max_length", value, "max_length" in settings, limit))
    lengths = [(k, v, w and _written(written, k), lim) for k, v, w, lim in lengths]
    for key, value, written, limit_why in lengths:
        if limit_why is None or isinstance(value, bool) or not isinstance(value, int):
            continue
        limit, why = limit_why
        if value > limit:
            given = f"{value}" if written else f"not set, so its default {value},"
            raise ConfigError(
                f"{key}: {given} exceeds the base model's {limit} tokens ({why}); at most {limit}"
                + ("" if written else f": set {key}: {limit}")
            )
