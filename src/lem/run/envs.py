"""The rules' conda environments as Snakemake sees them: envs/<name>.yaml with the package it installs written in.

Snakemake names a conda environment by the bytes of its file (and of the file's post-deploy script and pin
file, and the folder of the environments). The rules name a copy of envs/<name>.yaml that common.smk writes when
the workflow loads (`lem_env`), under `.snakemake/lem-envs/` of the working directory: `${LEM_PIPELINE_PACKAGE}`
filled in with the package's source (`file://` of the workflow's folder, or `git+<URL>@<commit>` of a module from
a git repository: workflow/rules/source.smk, `workflow_code`), and on top what names the code it installs
(`PackageCode`): the package's version and commit, and for a checkout with uncommitted edits to its code the
digest of those edits. A reader opens the file and sees what the environment holds; the same code gives the same
bytes (the environment already created), new code (a commit, a version, an edit of a function) new bytes and a
new environment.

What is code (`code_edits`): the files under src/ and pyproject.toml, a Python module by its syntax tree with
its docstrings left out (`code_text`), so an edited comment or docstring is no new code; caches and egg-info are
not. Standard library only, and no Snakemake: the workflow calls it at every load, SLURM jobs included.
"""

from __future__ import annotations

import ast
import hashlib
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

# where common.smk writes the rules' environment files, relative to the working directory
ENV_DIR = Path(".snakemake") / "lem-envs"
PACKAGE_VARIABLE = "${LEM_PIPELINE_PACKAGE}"  # what envs/*.yaml install the package from, filled in here
CODE = ("pyproject.toml", "src")  # what pip builds the package from
SKIPPED = {"__pycache__", ".pytest_cache", ".ruff_cache"}


@dataclass(frozen=True)
class PackageCode:
    """The code an environment installs: `source`, what pip installs (`file:///...` or `git+<URL>@<commit>`);
    `version`, the package's; `commit`, the commit of the checkout or of the module (None: a folder outside git);
    `edits`, the sha256 of the code's uncommitted edits (`code_edits`; None: none), or of the whole code when
    there is no commit; `files_sha256`, for a module's package read file by file (workflow/rules/source.smk),
    the sha256 of its file list (PACKAGE_FILES): what names its code in place of a commit."""

    source: str
    version: str | None
    commit: str | None
    edits: str | None = None
    files_sha256: str | None = None

    def header(self, name: str) -> str:
        """The generated file's comment lines: what it installs, and what names that code."""
        code = f"lem-pipeline {self.version or '(no version)'}"
        if self.commit:
            code += f" at commit {self.commit}"
        elif self.files_sha256:
            code += f" of a module, its files' list ({PACKAGE_FILES}) sha256 {self.files_sha256}"
        lines = [
            f"# Generated from envs/{name}.yaml when the workflow loaded (workflow/rules/common.smk, lem_env; "
            "lem.run.envs): do not edit.",
            f"# It installs {code} from {self.source}",
        ]
        if self.edits and self.commit:
            lines.append(
                f"# with uncommitted edits to the code (docstrings and comments aside): sha256 {self.edits}"
            )
        elif self.edits:
            lines.append(f"# code outside git: sha256 {self.edits} (docstrings and comments aside)")
        lines.append(
            "# Snakemake names an environment by this file's bytes: the code's version and commit name it, not "
            "its comments."
        )
        return "\n".join(lines) + "\n"


def code_text(path: str, data: bytes) -> bytes:
    """What of a file is code: a Python module's syntax tree without its docstrings (comments are not in the
    tree), any other file's bytes (a module that does not parse: its bytes)."""
    if not path.endswith(".py"):
        return data
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return data
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree, include_attributes=False).encode()


def _git(root: Path, *args: str, stdin: bytes | None = None) -> bytes | None:
    """git's stdout in `root` (no GIT_* variable of the caller's), None when git fails or is missing."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    try:
        proc = subprocess.run(
            ["git", "-C", str(root), *args], input=stdin, capture_output=True, env=env, timeout=60
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def _digest(entries: list[tuple[str, bytes | None]]) -> str:
    digest = hashlib.sha256()
    for rel, data in sorted(entries, key=lambda e: e[0]):
        name = rel.encode()
        digest.update(b"%d:%s" % (len(name), name))
        digest.update(b"-" if data is None else b"%d:%s" % (len(data), data))
    return digest.hexdigest()


def source_files(root: Path) -> list[str]:
    """pyproject.toml and every file under src/ of a package folder, relative, in a fixed order (caches,
    compiled files and egg-info left out)."""
    files = ["pyproject.toml"] if (root / "pyproject.toml").is_file() else []
    for folder, dirs, names in os.walk(root / "src"):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED and not d.endswith(".egg-info"))
        for n in sorted(names):
            if not n.endswith((".pyc", ".pyo")):
                files.append((Path(folder) / n).relative_to(root).as_posix())
    return files


# The package's file list that a module from a git repository is read by (workflow/rules/source.smk): Snakemake's
# documented `workflow.source_path` reads one file at a time and lists no folder, so the repository carries its
# list, with each file's sha256, and tests/unit/test_package_files.py checks it is current.
PACKAGE_FILES = "workflow/package-files.txt"
BUILD_ONLY = ("README.md",)  # what pip needs to build the package (pyproject's `readme`), read as it is


def package_files_text(root: Path) -> str:
    """The text of `PACKAGE_FILES` for the repository `root`: a header, then one line per file that the
    package is built from (`source_files`), `<sha256>  <path>` (a link inside the repository: `<sha256>  <path>
    <- <the repository's file it names>`, where a reader of single files finds its bytes), and `-  <path>` for
    `BUILD_ONLY` (no digest: its bytes are no code). Regenerate with `python scripts/package_files.py`."""
    root = Path(root)
    lines = [
        "# The files of the `lem` package and their sha256: how workflow/rules/source.smk reads the package of a",
        "# module from a git repository through Snakemake's documented workflow.source_path (one file at a time).",
        "# Generated by `python scripts/package_files.py`; tests/unit/test_package_files.py checks it is current.",
    ]
    for rel in source_files(root):
        path = root / rel
        line = f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {rel}"
        if path.is_symlink():  # a link inside the repository: read from the file it names
            target = path.resolve()
            if not target.is_relative_to(root.resolve()):
                raise ValueError(f"{path} is a link out of the repository ({target})")
            line += f"  <- {target.relative_to(root.resolve()).as_posix()}"
        lines.append(line)
    lines += [f"-  {rel}" for rel in BUILD_ONLY]
    return "\n".join(lines) + "\n"


def code_edits(root: Path, commit: str | None) -> str | None:
    """The sha256 of the code of a package folder `root` that differs from its commit `commit` (files under src/
    and pyproject.toml modified, added, removed, untracked: each by its `code_text`), None when only docstrings,
    comments or nothing changed. With no commit (a folder outside git), the sha256 of all its code."""
    root = Path(root)
    if commit is None:
        return _digest([(rel, code_text(rel, (root / rel).read_bytes())) for rel in source_files(root)])
    status = _git(
        root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--", *CODE
    )
    if status is None:
        return _digest([(rel, code_text(rel, (root / rel).read_bytes())) for rel in source_files(root)])
    changed = sorted(
        {rec[3:].decode("utf-8", "surrogateescape") for rec in status.split(b"\0") if len(rec) > 3}
    )
    changed = [
        p
        for p in changed
        if not (set(p.split("/")) & SKIPPED or ".egg-info/" in p or p.endswith((".pyc", ".pyo")))
    ]
    if not changed:
        return None
    committed = _committed(root, commit, changed)
    edits = []
    for rel in changed:
        path = root / rel
        now = code_text(rel, path.read_bytes()) if path.is_file() else None
        before = committed.get(rel)
        if now != (None if before is None else code_text(rel, before)):
            edits.append((rel, now))
    return _digest(edits) if edits else None


def _committed(root: Path, commit: str, paths: list[str]) -> dict[str, bytes]:
    """The bytes of `paths` at `commit` (one `git cat-file --batch`); a path the commit lacks is left out."""
    out = _git(root, "cat-file", "--batch", stdin="".join(f"{commit}:{p}\n" for p in paths).encode())
    found: dict[str, bytes] = {}
    at = 0
    for rel in paths:
        if out is None:
            break
        end = out.index(b"\n", at)
        header = out[at:end].split(b" ")
        if header[-1] == b"missing" or len(header) != 3:
            at = end + 1
            continue
        size = int(header[2])
        if header[1] == b"blob":
            found[rel] = out[end + 1 : end + 1 + size]
        at = end + 1 + size + 1
    return found


def env_text(template: str, name: str, code: PackageCode) -> str:
    """envs/<name>.yaml's text with the package's source filled in and what names its code on top."""
    return code.header(name) + template.replace(PACKAGE_VARIABLE, code.source)


def write_env(template: Path, out_dir: Path, code: PackageCode) -> Path:
    """Write `template` (envs/<name>.yaml) as `out_dir`/<name>.yaml for `code` (`env_text`), unless it already
    holds those bytes (atomically: jobs loading the workflow side by side write the same bytes); its absolute
    path, as the rules' `conda:` names it."""
    name = Path(template).stem
    text = env_text(Path(template).read_text(encoding="utf-8"), name, code)
    out = (Path(out_dir) / f"{name}.yaml").absolute()
    if out.is_file() and out.read_text(encoding="utf-8") == text:
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=out.parent)  # unique across hosts too
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, out)
    return out
