"""Device, precision, threads, seeds and random-generator state of a training run (`lem.core.training`)."""

from __future__ import annotations

import os
import random
from typing import Any

import numpy as np

from lem.core.settings import SettingsError

# Imported inside functions: torch and transformers (planning imports this package, with the training stages'
# settings, and needs neither)

PRECISIONS = ("auto", "fp32", "fp16", "bf16")


def pick_device(device: str = "auto") -> str:
    """`auto`: cuda when a GPU is visible, else cpu; an explicit cuda device that is not there fails."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise SettingsError(
            f"device {device!r} asked for, but no CUDA GPU is visible (use device: auto or cpu)"
        )
    return device


def precision_flags(precision: str, device: str = "auto") -> dict[str, bool]:
    """TrainingArguments flags for `precision`: `auto` is bf16 autocast on a GPU that has it (else fp16) and
    float32 on the CPU; `fp16` / `bf16` ask for that autocast; `fp32` for neither."""
    import torch

    if precision not in PRECISIONS:
        raise ValueError(f"precision {precision!r} not in {PRECISIONS}")
    if precision == "auto":
        if not pick_device(device).startswith("cuda"):
            return {}
        return {"bf16": True} if torch.cuda.is_bf16_supported() else {"fp16": True}
    return {"fp16": precision == "fp16", "bf16": precision == "bf16"}


def set_threads(threads: int | None) -> None:
    import torch

    if threads:
        torch.set_num_threads(threads)


def seed_everything(seed: int) -> None:
    """Python's, numpy's and torch's (CPU and GPU) generators from `seed` (transformers.set_seed)."""
    from transformers import set_seed

    set_seed(int(seed))


def world_size() -> int:
    """Processes of this training run (torchrun sets WORLD_SIZE; 1 otherwise)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def rng_state() -> dict[str, Any]:
    import torch

    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    import torch

    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state:
        torch.cuda.set_rng_state_all(state["cuda"])
