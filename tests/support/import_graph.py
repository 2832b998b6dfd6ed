"""The import graph of src/lem, read from the source (no module is imported): every `import` statement
between lem modules, at the top of a file or inside a function alike (tests/unit/test_imports.py,
tests/unit/test_layers.py)."""

from __future__ import annotations

from pathlib import Path

from lem.run.training_code import imports_of as package_imports
from lem.run.training_code import package_modules

SRC = Path(__file__).resolve().parents[2] / "src"


MODULES = package_modules(SRC / "lem")


def imports_of(module: str, path: Path) -> set[str]:
    """The lem modules `module` imports anywhere in its file (`from a import b` counts b when b is a module):
    lem.run.training_code's reader, which names the training code by the same graph."""
    return package_imports(module, path, MODULES)


GRAPH = {module: imports_of(module, path) for module, path in MODULES.items()}
