"""Ctrl-C (SIGINT) stops a run and its running `lem` jobs promptly.

Snakemake's local executor, interrupted, only waits for its running jobs: they stop only if the interrupt
reaches them too. A terminal's Ctrl-C does (it signals the whole foreground process group); a `kill -INT`
of Snakemake's process alone (a script, a supervisor) does not, and a job started with SIGINT ignored (a
background job of a non-interactive shell) would ignore it. So:

- `forward_to_jobs()`, in Snakemake's process (the workflow calls it when the user asks,
  `LEM_FORWARD_INTERRUPT=1`: lem.run.job_env): SIGINT is passed on to every process
  below Snakemake (the jobs' shells and `lem` commands), then Snakemake handles it as usual;
- `restore_default()`, first thing in every `lem` command: SIGINT raises KeyboardInterrupt even when the
  process was started with it ignored;
- `checkpoint_on_interrupt()`, a Trainer callback: a training run interrupted saves a checkpoint at the end
  of its current step (when its checkpoints are resumable) and stops with KeyboardInterrupt; the rerun
  resumes from it. A second SIGINT more than `REPEAT_S` seconds after the first stops at once (an
  interrupt delivered twice, by the terminal and by the forwarding, counts once).
- `stop_on_interrupt(outputs)`, around a verb's work (`lem sentiment finetune`): an interrupt is never a
  success. KeyboardInterrupt alone is not enough: raised where the signal lands, it can be swallowed there (a
  `__del__`, e.g. datasets' `Dataset.__del__`, prints "Exception ignored ... KeyboardInterrupt" and goes on; a
  library that catches BaseException), and the job then ran on and exited 0. So SIGINT and SIGTERM also set
  a flag (`interrupted()`), which stays set: `check()` between units of work (a job's seeds), the training
  callback at every step, and the block's end raise KeyboardInterrupt again, and the block removes the
  outputs (every `outputs` path, its temporary siblings and work folders) before the command exits 130.
  Every `lem` command runs its verb in such a block (`lem.core.stage`), with `only_new=True`: of its declared
  outputs (`--out`, `--out-dir`, `--out-*`) only what the job created or rewrote is removed (`OutputsBefore`),
  never what was there before it, nor an input (`keep`: the command's other path arguments). Blocks nest (the
  verb's own, sentiment's, inside the command's): the flag stays set until the outermost block ends, so the
  command fails even if the inner block's KeyboardInterrupt is swallowed on its way out.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import stat
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

# Imported inside functions: psutil and transformers (`lem --help` imports this module, through
# lem.core.stage, and needs neither)

log = logging.getLogger(__name__)

REPEAT_S = 2.0  # a second SIGINT within this many seconds of the first is the same interrupt
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

_received: list[int] = []  # the interrupting signals received inside `stop_on_interrupt` blocks
_blocks: list[int] = []  # the `stop_on_interrupt` blocks running (nested: each its start in `_received`)


def interrupted() -> int | None:
    """The first interrupting signal this process received under watch (SIGINT, SIGTERM), else None."""
    return _received[0] if _received else None


def note(signum: int) -> None:
    """Record an interrupting signal inside a `stop_on_interrupt` block: the flag that stays set whatever becomes
    of the KeyboardInterrupt, until the block ends (outside a block, nothing is recorded)."""
    if _blocks:
        _received.append(signum)


def check() -> None:
    """KeyboardInterrupt when an interrupt was received, even one whose KeyboardInterrupt was swallowed where it
    landed: call it between units of work."""
    if _received:
        raise KeyboardInterrupt(f"interrupted by {signal.Signals(_received[0]).name}")


def _raise_interrupt(signum: int, frame: Any) -> None:
    note(signum)
    raise KeyboardInterrupt(f"interrupted by {signal.Signals(signum).name}")


def _note_only(signum: int, frame: Any) -> None:
    note(signum)


def remove_outputs(outputs: Iterable[str | os.PathLike]) -> list[str]:
    """Remove each output (a file or a folder), its atomic writes' temporary siblings (`.<name>.*`, as
    lem.core.files.atomic_path makes them) and its work folder (`.<name>.work`); returns what was removed."""
    removed = []
    for out in map(Path, outputs):
        siblings = (
            [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.")]
            if out.parent.is_dir()
            else []
        )
        for path in [out, *siblings]:
            if path.is_symlink() or path.is_file():
                path.unlink(missing_ok=True)
            elif path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                continue
            removed.append(str(path))
    return removed


Signature = tuple[int, int, int, bool]  # inode, mtime (ns), size, a folder (not a link to one)


def _signature(path: Path) -> Signature | None:
    try:
        st = path.lstat()
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size, stat.S_ISDIR(st.st_mode))


def _absolute(path: str | os.PathLike) -> Path:
    return Path(os.path.abspath(path))


class OutputsBefore:
    """What a job's outputs held before it ran, so that an interrupted job removes only what it made.

    Taken of each output (a file or a folder), its temporary siblings (`.<name>.*`: atomic writes, work
    folders) and, inside an output folder that existed, every entry (up to `LIMIT` entries in all, the
    shallowest first; a folder past that is left as it is). `remove_new()` removes what is new since (a path
    that was not there) or rewritten (a file whose inode, time or size changed); a folder that was there
    stays, only its new or rewritten entries go. A `keep` path (an input, a checkpoint folder) is never
    removed, nor a folder holding one (its other new entries are)."""

    LIMIT = 20_000

    def __init__(self, outputs: Iterable[str | os.PathLike], keep: Iterable[str | os.PathLike] = ()) -> None:
        self.outputs = [_absolute(o) for o in outputs]
        self.keep: set[Path] = set()
        for k in keep:
            text = os.fspath(k) if isinstance(k, str | os.PathLike) else ""
            if 0 < len(text) < 4096 and "\0" not in text:  # a path, not a JSON object or a number
                self.keep.add(_absolute(text))
                if os.path.lexists(text):
                    self.keep.add(Path(os.path.realpath(text)))
        self.seen: dict[Path, Signature] = {}
        self.listed: set[Path] = set()  # folders whose entries were recorded
        queue: deque[Path] = deque()
        for out in self.outputs:
            for path in [out, *self._siblings(out)]:
                sig = _signature(path)
                if sig is not None:
                    self.seen[path] = sig
                    if path == out and sig[3]:
                        queue.append(path)
        while queue and len(self.seen) < self.LIMIT:  # breadth first: the shallowest entries first
            folder = queue.popleft()
            try:
                entries = list(folder.iterdir())
            except OSError:
                continue
            if len(self.seen) + len(entries) > self.LIMIT:
                break
            self.listed.add(folder)
            for path in entries:
                sig = _signature(path)
                if sig is not None:
                    self.seen[path] = sig
                    if sig[3]:
                        queue.append(path)

    @staticmethod
    def _siblings(out: Path) -> list[Path]:
        try:
            return [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.")]
        except OSError:
            return []

    def _holds_kept(self, path: Path) -> bool | None:
        """True: `path` is a kept path; False: a folder above one; None: neither."""
        real = Path(os.path.realpath(path.parent)) / path.name
        for p in {path, real}:
            if p in self.keep:
                return True
        if any(p in k.parents for k in self.keep for p in {path, real}):
            return False
        return None

    def _remove(self, path: Path, removed: list[str]) -> None:
        held = self._holds_kept(path)
        if held is True:
            return
        if held is False:  # a folder above a kept path: its other entries only
            if path.is_dir() and not path.is_symlink():
                for child in list(path.iterdir()):
                    self._remove(child, removed)
            return
        if path.is_symlink() or path.is_file():
            path.unlink(missing_ok=True)
        elif path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            return
        removed.append(str(path))

    def _remove_changed(self, path: Path, removed: list[str]) -> None:
        now, was = _signature(path), self.seen.get(path)
        if now is None:
            return
        if was is None:  # made by the job
            self._remove(path, removed)
        elif was[3] and now[3] and was[0] == now[0]:  # a folder that was there: its new or rewritten entries
            if path in self.listed:
                for child in list(path.iterdir()):
                    self._remove_changed(child, removed)
        elif now != was:  # a file (or link) the job rewrote, a folder it replaced
            self._remove(path, removed)

    def remove_new(self) -> list[str]:
        """Remove what the job created or rewrote of its outputs; returns what was removed."""
        removed: list[str] = []
        for out in self.outputs:
            for path in [out, *self._siblings(out)]:
                try:
                    self._remove_changed(path, removed)
                except OSError as err:  # the clean-up goes on: Snakemake removes a failed job's outputs
                    log.warning("interrupted: could not remove %s: %s", path, err)
        return removed


@contextmanager
def stop_on_interrupt(
    outputs: Iterable[str | os.PathLike] = (),
    *,
    only_new: bool = False,
    keep: Iterable[str | os.PathLike] = (),
) -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM set the flag (`interrupted()`) and raise KeyboardInterrupt. When the
    block ends by KeyboardInterrupt, or with the flag set (normally: the KeyboardInterrupt was swallowed where
    it landed; or by another error, one a library made of it), the `outputs` are removed (`remove_outputs`)
    and KeyboardInterrupt leaves it: `lem.core.stage` prints "interrupted" and the command exits 130, never
    0. With `only_new`, only what the block created or rewrote of the outputs is removed, never a `keep` path
    (`OutputsBefore`, taken as the block starts). A further interrupt during the removal is recorded, not
    raised. The handlers before the block are restored after it. Outside the main thread (no signal handlers
    there) the flag is still checked. The flag is cleared when the outermost block ends (a nested block's
    interrupt also fails the blocks around it)."""
    outputs = list(outputs)
    before = OutputsBefore(outputs, keep) if only_new else None  # before any handler: nothing to undo yet
    main = threading.current_thread() is threading.main_thread()
    previous: dict[int, Any] = {}
    start = len(_received)
    _blocks.append(start)
    try:
        if main:
            for s in STOP_SIGNALS:
                previous[s] = signal.signal(s, _raise_interrupt)
        yield
        if len(_received) > start:
            raise KeyboardInterrupt(f"interrupted by {signal.Signals(_received[start]).name}")
    except BaseException as err:
        if not isinstance(err, KeyboardInterrupt) and len(_received) == start:
            raise  # a failure of its own, no interrupt: the caller's to report
        for s in previous:
            signal.signal(s, _note_only)  # the clean-up is not cut short
        removed = before.remove_new() if before is not None else remove_outputs(outputs)
        if removed:
            log.warning("interrupted: removed %s", ", ".join(removed))
        if isinstance(err, KeyboardInterrupt):
            raise
        raise KeyboardInterrupt(f"interrupted by {signal.Signals(_received[start]).name}") from err
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        _blocks.pop()
        if not _blocks:
            del _received[start:]  # answered (an in-process caller, a test, goes on); kept for an outer block


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
            note(signum)  # the flag stays set even if the KeyboardInterrupt raised later is swallowed
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
            if self.requested is None and _received:  # received before the run, or its KeyboardInterrupt lost
                self.requested = time.monotonic()
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
