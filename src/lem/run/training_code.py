"""The code a pre-training job runs, named by one digest: the pre-training rules pass it as a parameter, so
Snakemake retrains a seed whose training code changed (its `params` trigger) and a run never pools seeds that
different code trained. A run that grows its seeds over sessions and commits (config/local-evidence.yaml)
keeps the seeds already trained only while the code that trains them is the same.

What is the training code (`training_modules`): every module of the `lem` package that `lem pretrain`
imports, read from the source (`import` statements at the top of a file or inside a function alike, followed
to the end; a parent package's `__init__` counts, as Python runs it): the command (`lem.cli`), the stage
(`lem.pretrain.cli`) and all they import, down to `lem.core`. Each module counts by its syntax tree without
its docstrings (`lem.run.envs.code_text`), so an edited comment or docstring retrains nothing. Third-party
packages are not in it: their versions are in every metrics file's provenance and, under `--sdm conda`, in
the environment (lem.run.envs).

Standard library (and lem.core.files' atomic write, which planning has loaded): planning calls it once per load. The digest is kept in a cache named by everything it
is computed from (`source_key`: the Python version and every file of the package, its name and bytes), so a
planning run over unchanged code reads it instead of parsing the modules again (0.5 CPU-s of each dry run on a
2-core AMD EPYC, 2026-11-29); any edit, a comment's included, names another entry, and an unreadable entry or
cache folder is recomputed over.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import os
import re
import sys
from pathlib import Path

from lem.core.files import write_text
from lem.run.envs import code_text

ENTRIES = ("lem.cli", "lem.pretrain.cli")  # what `lem pretrain ...` runs: the command, then its stage


def package_modules(package: Path) -> dict[str, Path]:
    """Module name -> file of every module of the package folder `package` (its name is the folder's)."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = [package.name, *path.relative_to(package).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _resolve(name: str, modules: dict[str, Path]) -> str:
    """The module `name` is (a module, or an attribute of one), "" outside the package."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules (`package_modules`) that `module` imports anywhere in its file, at the top or
    inside a function (`from a import b`: b when b is a module, else a); the import graph of the layer tests
    too (tests/support/import_graph.py)."""
    root = module.split(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_bytes(), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                if path.name != "__init__.py":
                    base.pop()
                base = base[: len(base) - node.level + 1] + ([node.module] if node.module else [])
                source = ".".join(base)
            else:
                source = node.module or ""
            names = [full if (full := f"{source}.{a.name}") in modules else source for a in node.names]
        else:
            continue
        out |= {found for name in names if name.split(".")[0] == root and (found := _resolve(name, modules))}
    out.discard(module)
    return out


def training_modules(package: Path, entries: tuple[str, ...] = ENTRIES) -> list[str]:
    """The modules `entries` import, transitively, with every parent package of each, sorted."""
    modules = package_modules(package)
    missing = [e for e in entries if e not in modules]
    if missing:
        raise FileNotFoundError(f"{package}: no module {missing} (expected the lem package's source)")
    seen: set[str] = set()
    todo = list(entries)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        parts = name.split(".")
        todo += [p for i in range(1, len(parts)) if (p := ".".join(parts[:i])) in modules]
        todo += sorted(imports_of(name, modules[name], modules) - seen)
    return sorted(seen)


def cache_dir() -> Path:
    """Where the digests are kept: `$LEM_CACHE_DIR`, else `$XDG_CACHE_HOME/lem-pipeline`, else
    `~/.cache/lem-pipeline`; then `training-code/`."""
    root = os.environ.get("LEM_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "lem-pipeline"
    )
    return Path(root) / "training-code"


def source_key(package: Path) -> str:
    """The sha256 of everything the digest is computed from: the Python version (the syntax trees) and every
    module of the package folder (`package_modules`: the import graph and the modules' text), name and bytes;
    this file and lem.run.envs, which compute it, among them."""
    key = hashlib.sha256(b"training_code 1\n%s\n" % sys.version.encode())
    for name, path in package_modules(package).items():
        data = path.read_bytes()
        key.update(b"%d:%s%d:%s" % (len(name), name.encode(), len(data), data))
    return key.hexdigest()


def compute_training_code(package: Path) -> str:
    """The sha256 of the training code (`training_modules`) of the package folder `package`, from its source."""
    modules = package_modules(package)
    digest = hashlib.sha256()
    for name in training_modules(package):
        data = code_text(modules[name].name, modules[name].read_bytes())
        digest.update(b"%d:%s%d:%s" % (len(name), name.encode(), len(data), data))
    return digest.hexdigest()


@functools.cache
def training_code(package: Path | None = None) -> str:
    """The sha256 of the training code (`training_modules`) of the package folder `package` (default: the
    `lem` this process imported, which planning makes the workflow's own): read from the cache entry of the
    package's `source_key` when there is one, else computed (`compute_training_code`) and kept there."""
    if package is None:
        package = Path(__file__).resolve().parents[1]  # this module's package: the lem planning imported
    entry = cache_dir() / source_key(package)
    try:
        kept = entry.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        kept = ""
    if re.fullmatch(r"[0-9a-f]{64}", kept):
        return kept
    digest = compute_training_code(package)
    try:  # atomically: a planning run beside this one reads the whole digest or none
        write_text(entry, digest + "\n")
    except OSError:  # no cache (a read-only home): the digest is computed each time
        pass
    return digest
