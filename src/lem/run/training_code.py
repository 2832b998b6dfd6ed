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

Standard library only: planning calls it once per load.
"""

from __future__ import annotations

import ast
import functools
import hashlib
from pathlib import Path

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


@functools.cache
def training_code(package: Path | None = None) -> str:
    """The sha256 of the training code (`training_modules`) of the package folder `package` (default: the
    `lem` this process imported, which planning makes the workflow's own)."""
    if package is None:
        package = Path(__file__).resolve().parents[1]  # this module's package: the lem planning imported
    modules = package_modules(package)
    digest = hashlib.sha256()
    for name in training_modules(package):
        data = code_text(modules[name].name, modules[name].read_bytes())
        digest.update(b"%d:%s%d:%s" % (len(name), name.encode(), len(data), data))
    return digest.hexdigest()
