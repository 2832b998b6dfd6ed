"""The import graph of src/lem, read from the source (no module is imported): every `import` statement
between lem modules, at the top of a file or inside a function alike (tests/unit/test_imports.py,
tests/unit/test_layers.py)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted((SRC / "lem").rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _resolve(name: str) -> str:
    """The lem module that `name` (a module, or a module's attribute) is, or is in."""
    while name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def imports_of(module: str, path: Path) -> set[str]:
    """The lem modules `module` imports anywhere in its file (`from a import b` counts b when b is a module)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            out |= {_resolve(a.name) for a in node.names if a.name.split(".")[0] == "lem"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                if path.name != "__init__.py":
                    base.pop()
                base = base[: len(base) - node.level + 1] + ([node.module] if node.module else [])
                source = ".".join(base)
            else:
                source = node.module or ""
            if source.split(".")[0] != "lem":
                continue
            for alias in node.names:
                full = f"{source}.{alias.name}"
                out.add(full if full in MODULES else _resolve(source))
    out.discard(module)
    return out


GRAPH = {module: imports_of(module, path) for module, path in MODULES.items()}
