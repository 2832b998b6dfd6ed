"""Atomic output writing: a failed step never leaves a half-written file behind."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import importlib.metadata
import json
import os
import platform
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lem.core.code_identity import code_identity
from lem.core.inputs import InputError, read_text
from lem.core.numerics import hardware_provenance


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary sibling path; rename it onto `path` only if the block succeeds.

    Works for files and for directories (the block creates whatever it wants at the temp path).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent)) / path.name
    try:
        yield tmp
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        os.replace(tmp, path)
    finally:
        shutil.rmtree(tmp.parent, ignore_errors=True)


FULL_DISK = (errno.ENOSPC, errno.EDQUOT)
NOT_WRITABLE = (errno.EROFS, errno.EACCES, errno.EPERM)
FULL_DISK_WORDS = ("No space left on device", "Disk quota exceeded", "file write failed")


def _chain(err: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        yield err
        err = err.__cause__ or err.__context__  # type: ignore[assignment]


def _output_of(filename: Any) -> Path | None:
    """The output a failed write was for: an `atomic_path` temporary (`<folder>/.<name>.XXXXXXXX`, or a file
    inside it) read as `<folder>/<name>`; None when unknown."""
    if filename is None:
        return None
    path = Path(os.fsdecode(filename))
    temp = re.compile(r"\.(.+)\.[A-Za-z0-9_]{8}")
    if temp.fullmatch(path.parent.name) and temp.fullmatch(path.parent.name).group(1) == path.name:
        return path.parent.parent / path.name
    match = temp.fullmatch(path.name)
    return path.parent / match.group(1) if match else path


def _folder(filename: Any) -> str:
    """The folder a failed write was in (an `atomic_path` temporary's: the output's own folder)."""
    output = _output_of(filename)
    return "the output folder" if output is None else str(output.parent)


def output_problem(err: BaseException, outputs: Any = ()) -> str | None:
    """One line for an output that could not be written, or None for any other error: a full disk or
    quota (ENOSPC, EDQUOT; also when a library wraps it, e.g. torch's "file write failed") and a folder that
    is read-only or not writable (EROFS, EACCES, EPERM), naming the folder and what to do. Outputs are
    written with `atomic_path`, so nothing half-written is left and a rerun starts clean. `outputs`: the
    command's output paths, naming the folder when the error does not (a write or close of a full disk)."""
    for e in _chain(err):
        if isinstance(e, OSError) and e.errno in NOT_WRITABLE and e.filename is not None:
            folder = _folder(e.filename)
            return (
                f"cannot write {_output_of(e.filename)} ({e.strerror}): make {folder} writable (or run in "
                "another folder), then rerun; nothing there was changed"
            )
        full = isinstance(e, OSError) and e.errno in FULL_DISK
        if full or any(w in str(e) for w in FULL_DISK_WORDS):
            filename = getattr(e, "filename", None)
            if filename is None and outputs:  # a write or close names no file: the command's first output
                filename = os.fsdecode(list(outputs)[0]).rstrip(os.sep)
            folder = _folder(filename)
            try:
                left = shutil.disk_usage(folder).free
                free = f"{left / 1e9:.1f} GB free" if left >= 1e9 else f"{left / 1e6:.1f} MB free"
            except OSError:
                free = "free space unknown"
            return (
                f"no space left on the device of {folder} ({free}): free space there (old runs' results/, "
                "checkpoints, or the quota), then rerun; outputs are written whole or not at all, so "
                "nothing was lost or left half-written"
            )
    return None


def os_error_line(err: OSError) -> str:
    """An OSError as one line naming the file (`x.tsv: no such file or directory`), not `[Errno 2] ...`."""
    name = os.fsdecode(err.filename) if err.filename is not None else None
    what = err.strerror.lower() if err.strerror else str(err)  # a message of our own keeps its case
    if isinstance(err, FileNotFoundError) and name:
        return f"{name}: no such file or directory (expected an existing path)"
    return f"{name}: {what}" if name else what


def write_text(path: str | os.PathLike, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json(path: str | os.PathLike, obj: Any) -> None:
    write_text(path, json.dumps(obj, indent=2, ensure_ascii=False, sort_keys=False) + "\n")


def metrics_keys(keys: Any) -> dict[str, str] | None:
    """The parsed `--keys` argument of a metrics writer (`lem mine run`, `lem sentiment finetune`, `lem curate rank
    rank`, `lem annotate score`): a JSON object of strings naming what the file measures (`variant`, `task`,
    `dataset`, `pair`, `seed` where it applies; `docs/contracts.md`), written as the file's top-level `keys`.
    None when not given."""
    if keys is None:
        return None
    if not isinstance(keys, dict) or not all(isinstance(v, str) for v in keys.values()):
        raise ValueError(f"--keys must be a JSON object of strings, got {json.dumps(keys)}")
    return keys


# what the running `lem` command received, set by lem.core.stage for a metrics writer (`record_job_settings`)
_JOB: dict[str, Any] = {}

# distributions whose versions every metrics file records (None: not installed); faiss under its wheel names
VERSIONED = (
    "lem-pipeline",
    "torch",
    "transformers",
    "numpy",
    "scipy",
    "faiss-cpu",
    "faiss-gpu",
    "tokenizers",
)


def record_job_settings(command: str, argv: list[str]) -> None:
    """Remember the command (`lem mine run`) and the sha256 of the arguments it received, as JSON of
    `[command, *argv]` with `--threads N` left out (a resource, not a setting). In the workflow the arguments
    are exactly what the rule passed (its input and output paths, relative to the run's folder, its params
    and wildcards), so the hash changes when, and only when, Snakemake's params trigger reruns the job."""
    kept, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == "--threads":
            skip = True
        elif not a.startswith("--threads="):
            kept.append(a)
    text = json.dumps([command, *kept], ensure_ascii=False, separators=(",", ":"))
    _JOB.clear()
    _JOB.update(command=command, settings_sha256=hashlib.sha256(text.encode("utf-8")).hexdigest())


def software_versions() -> dict[str, str | None]:
    """Python and the installed versions of `VERSIONED` (read from package metadata: nothing is imported)."""
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for dist in VERSIONED:
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = None
    return versions


def run_provenance() -> dict[str, Any]:
    """The `provenance` field of every metrics file: the command that wrote it, the sha256 of the settings it
    received (`record_job_settings`; None when called outside a `lem` command), the software versions, the
    code (`lem.core.code_identity`: version, commit, uncommitted edits) and the hardware (`lem.core.numerics.hardware_provenance`: CPU, SIMD flags, `cpu_numerics` and the levels pinned,
    PyTorch's kernel level, BLAS, threads; the GPU when one was used)."""
    return {
        "command": _JOB.get("command"),
        "settings_sha256": _JOB.get("settings_sha256"),
        "versions": software_versions(),
        "code": code_identity(),
        "hardware": hardware_provenance(),
    }


def with_keys(metrics: dict[str, Any], keys: dict[str, str] | None) -> dict[str, Any]:
    """What a metrics writer writes: `keys` first (left out when there are none), the metrics, then
    `provenance` (`run_provenance`). Every field is deterministic: wall-clock times go to the job's
    benchmark file and log, never here, so two runs of one config write byte-identical metrics."""
    head = {} if keys is None else {"keys": keys}
    return {**head, **metrics, "provenance": run_provenance()}


def read_json(path: str | os.PathLike) -> Any:
    """The JSON value of file `path`; `lem.core.inputs.InputError` naming the file and the line when it is not
    UTF-8 JSON (a `lem` verb prints it as one line), OSError when it cannot be read."""
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as err:
        raise InputError(
            f"{path}:{err.lineno}: expected JSON, got {err.msg.lower()} (column {err.colno})"
        ) from None


def content_digest(paths: list[str | os.PathLike]) -> str:
    """sha256 over what `paths` hold (every file of a folder: relative name, size and bytes), not their
    names: a model or features folder rebuilt with other content gets another digest."""
    h = hashlib.sha256()
    for root in map(Path, paths):
        files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
        h.update(f"{len(files)}\0".encode())
        for f in files:
            rel = f.relative_to(root).as_posix() if root.is_dir() else f.name
            h.update(f"{rel}\0{f.stat().st_size}\0".encode())
            with open(f, "rb") as fh:
                while chunk := fh.read(1 << 20):
                    h.update(chunk)
    return h.hexdigest()
