"""Ctrl-C (SIGINT) stops a run and its running `lem` jobs promptly.

Snakemake's local executor, interrupted, only waits for its running jobs: they stop only if the interrupt
reaches them too. A terminal's Ctrl-C does (it signals the whole foreground process group); a `kill -INT`
of Snakemake's process alone (a script, a supervisor) does not, and a job started with SIGINT ignored (a
background job of a non-interactive shell) would ignore it. So:

- `forward_to_jobs()`, in Snakemake's process (the workflow calls it): SIGINT is passed on to every process
  below Snakemake (the jobs' shells and `lem` commands), then Snakemake handles it as usual;
- `restore_default()`, first thing in every `lem` command: SIGINT raises KeyboardInterrupt even when the
  process was started with it ignored;
- `checkpoint_on_interrupt()`, a Trainer callback: a training run interrupted saves a checkpoint at the end
  of its current step (when its checkpoints are resumable) and stops with KeyboardInterrupt; the rerun
  resumes from it. A second SIGINT more than `REPEAT_S` seconds after the first stops at once (an
  interrupt delivered twice, by the terminal and by the forwarding, counts once).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from typing import Any

# Imported inside functions: psutil and transformers (`lem --help` imports this module, through
# lem.core.stage, and needs neither)

log = logging.getLogger(__name__)

REPEAT_S = 2.0  # a second SIGINT within this many seconds of the first is the same interrupt


def restore_default() -> None:
    """SIGINT raises KeyboardInterrupt, whatever disposition the process inherited (SIG_IGN from a
    background job of a non-interactive shell)."""
    if threading.current_thread() is threading.main_thread():
        if signal.getsignal(signal.SIGINT) in (signal.SIG_IGN, signal.SIG_DFL, None):
            signal.signal(signal.SIGINT, signal.default_int_handler)


def descendants(pid: int | None = None) -> list[int]:
    """Every process below `pid` (default: this one); psutil comes with Snakemake."""
    pid = os.getpid() if pid is None else pid
    try:
        import psutil

        return [p.pid for p in psutil.Process(pid).children(recursive=True)]
    except Exception:  # psutil missing, or the process gone
        return []


def forward_to_jobs() -> None:
    """In Snakemake's main process: on SIGINT, send SIGINT to every descendant (the running jobs), then let
    Snakemake's own handling run (KeyboardInterrupt: "Terminating processes on user request")."""
    if threading.current_thread() is not threading.main_thread():
        return  # signal handlers are the main thread's (Snakemake run through its API elsewhere)
    previous = signal.getsignal(signal.SIGINT)
    if getattr(previous, "_lem_forwarding", False):
        return  # installed already (the workflow is parsed more than once)
    try:
        import psutil  # noqa: F401  (imported now, not inside the handler)
    except ImportError:
        pass

    def forward(signum: int, frame: Any) -> None:
        for pid in descendants():
            try:
                os.kill(pid, signal.SIGINT)
            except OSError:
                pass  # gone meanwhile
        if callable(previous):
            previous(signum, frame)
        elif previous != signal.SIG_IGN:
            raise KeyboardInterrupt

    forward._lem_forwarding = True  # type: ignore[attr-defined]
    signal.signal(signal.SIGINT, forward)


def checkpoint_on_interrupt():
    """A TrainerCallback: on SIGINT during training, save a checkpoint at the end of the current step (if
    the run saves resumable checkpoints: `save_only_model` false) and stop with KeyboardInterrupt."""
    from transformers import TrainerCallback

    class CheckpointOnInterrupt(TrainerCallback):
        def __init__(self) -> None:
            self.requested: float | None = None
            self.previous: Any = None

        def handle(self, signum: int, frame: Any) -> None:
            now = time.monotonic()
            if self.requested is None:
                self.requested = now
                log.warning("interrupted: stopping after the current step (a checkpoint is saved first)")
            elif now - self.requested > REPEAT_S:
                raise KeyboardInterrupt

        def on_train_begin(self, args, state, control, **kw):
            if threading.current_thread() is threading.main_thread():
                self.previous = signal.signal(signal.SIGINT, self.handle)

        def on_step_end(self, args, state, control, **kw):
            if self.requested is not None:
                if args.save_only_model:  # no optimizer state: nothing to resume from
                    raise KeyboardInterrupt
                control.should_save = True
                control.should_training_stop = True
            return control

        def on_save(self, args, state, control, **kw):
            if self.requested is not None:
                log.warning(
                    "interrupted: checkpoint of step %d saved in %s", state.global_step, args.output_dir
                )
                raise KeyboardInterrupt

        def on_train_end(self, args, state, control, **kw):
            if self.previous is not None:
                signal.signal(signal.SIGINT, self.previous)
            if self.requested is not None:
                raise KeyboardInterrupt

    return CheckpointOnInterrupt()
