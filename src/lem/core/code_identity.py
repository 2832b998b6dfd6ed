"""Which code a job ran: the `lem` package's version and, when it is imported from a git checkout, the commit
of that checkout and whether `src/lem` differed from it (every metrics file's `provenance.code`; the report's
run archive lists every commit its metrics came from).

Computed once per process. Outside a git checkout (an installed wheel) the commit is None and the version
alone names the code. Nothing here imports a numeric library (`lem --help` stays light).
"""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path
from typing import Any

from lem.core.version import __version__

# written last in a module's package folder by workflow/rules/source.smk: the digest of its file list first
PACKAGE_MARKER = ".lem-src-complete"


@functools.cache
def code_identity() -> dict[str, Any]:
    """`{"version": ..., "commit": <40 hex> or None, "dirty": bool or None}` of the imported `lem` package:
    `dirty` is true when a tracked file under the package's folder differs from the commit (an uncommitted
    edit: the commit alone does not name the code that ran). The commit is read only where src/lem is the
    package of the checkout's root (not an install or a folder inside another repository). A module's package
    read file by file (workflow/rules/source.smk, its folder's PACKAGE_MARKER) has no commit: `files_sha256`,
    the digest of its file list, names it."""
    package = Path(__file__).resolve().parents[1]  # src/lem
    root = package.parents[1]
    identity: dict[str, Any] = {"version": __version__, "commit": None, "dirty": None}
    marker = _first_line(root / PACKAGE_MARKER)
    if marker is not None:  # a module's package, read file by file (workflow/rules/source.smk)
        identity["files_sha256"] = marker
        return identity
    top = _git(package, "rev-parse", "--show-toplevel")
    if top is None or Path(top).resolve() != root.resolve():
        return identity  # not the src/lem of a checkout (an install; a folder inside another repository)
    identity["commit"] = _git(package, "rev-parse", "HEAD")
    if identity["commit"] is not None:
        status = _git(package, "status", "--porcelain", "--untracked-files=no", "--", ".")
        identity["dirty"] = None if status is None else bool(status.strip())
    return identity


def _first_line(path: Path) -> str | None:
    """The first line of a text file, None when it cannot be read."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.readline().strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def _git(cwd: Path, *args: str) -> str | None:
    """git's stdout in `cwd` (stripped), None when git is missing or `cwd` is in no checkout."""
    try:
        out = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=30, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return out.strip()


def short(code: dict[str, Any] | None) -> str:
    """`0.1.0 at 1a2b3c4` (`+ uncommitted edits` when dirty), `0.1.0` without a commit, `unknown` for None."""
    if not code:
        return "unknown"
    text = str(code.get("version") or "?")
    if code.get("commit"):
        text += f" at {str(code['commit'])[:7]}"
        if code.get("dirty"):
            text += " + uncommitted edits"
    elif code.get("files_sha256"):
        text += f" (a module's files, sha256 {str(code['files_sha256'])[:7]})"
    return text
