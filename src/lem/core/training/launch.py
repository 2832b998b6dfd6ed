"""Launching data-parallel training runs (torchrun, one node) from a `lem` command (`lem.core.training`)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Sequence

# Imported inside functions: torch (planning imports this package, with the training stages' settings, and
# needs no torch)

log = logging.getLogger("lem.core.training")


def nproc_per_node(value: str | int | None) -> int:
    """Processes for a training job: an integer, or `gpus` (one per visible CUDA GPU, at least 1)."""
    if value in (None, "", 1, "1"):
        return 1
    if value == "gpus":
        import torch

        return max(1, torch.cuda.device_count())
    n = int(value)
    if n < 1:
        raise ValueError(f"nproc per node must be >= 1 or 'gpus', got {value!r}")
    return n


def launch_command(module_argv: Sequence[str], nproc: int) -> list[str]:
    """The command that runs `python -m lem.cli <module_argv>` as `nproc` data-parallel processes (torchrun,
    standalone: one node, a free rendezvous port)."""
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
            "-m", "lem.cli", *module_argv]  # fmt: skip


def relaunch(module_argv: Sequence[str], nproc: int) -> int | None:
    """Run this command under torchrun with `nproc` processes unless it already is one of them or `nproc` is
    1; returns the exit status, or None when the caller should train in this process."""
    if nproc <= 1 or "LOCAL_RANK" in os.environ:
        return None
    cmd = launch_command(module_argv, nproc)
    log.info("data-parallel training on %d processes: %s", nproc, " ".join(cmd))
    return subprocess.call(cmd)
