"""src/lem's layout (docs/development.md, "Layout"): every module imports; the `import` statements between lem modules
(at the top of a file or inside a function alike) form no circle; `lem.core` imports no stage; and every
stage of the `lem` command lives in the module or package named as the stage (`lem.<stage>` or
`lem.<stage>.cli`, `-` read as `_`). The import graph is tests/support/import_graph.py's; its layers,
tests/unit/test_layers.py."""

from __future__ import annotations

import importlib

import pytest
from support.import_graph import GRAPH, MODULES, SRC, imports_of

from lem import cli


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of `graph` (its modules in import order, the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_cycle_finder_and_import_walk():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]


def test_import_walk_counts_imports_inside_functions(tmp_path):
    path = tmp_path / "x.py"
    path.write_text("def f():\n    from lem.core import stage\n    import lem.core.files\n", encoding="utf-8")
    assert imports_of("lem.x", path) == {"lem.core.stage", "lem.core.files"}


@pytest.mark.parametrize("module", sorted(set(MODULES) - {"lem.__main__"}))  # __main__ runs the command
def test_every_module_imports(module):
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as err:  # an optional backend's package (stanza, spacy, sinling, laser, ...)
        if (err.name or "").split(".")[0] == "lem":
            raise
        pytest.skip(f"{module} needs {err.name}, not installed here")


def test_no_import_circle_among_lem_modules():
    assert len(MODULES) > 60 and "lem.core.stage" in GRAPH["lem.cli"]
    circle = _cycle(GRAPH)
    assert circle is None, "import circle: " + " -> ".join(circle)


def test_core_imports_no_stage():
    """lem.core is the bottom layer: the shared pieces import one another and nothing else of lem."""
    outside = {
        (module, imported)
        for module, imports in GRAPH.items()
        if module.startswith("lem.core")
        for imported in imports
        if not imported.startswith("lem.core")
    }
    assert not outside, sorted(outside)


def test_every_stage_lives_in_the_module_named_as_the_stage():
    for name, (module, _) in cli.STAGES.items():
        package = "lem." + name.replace("-", "_")
        assert module in (package, f"{package}.cli"), f"lem {name}: declared in {module}, expected {package}"
        assert module in MODULES and cli.stage(name).name == name


def test_every_rule_file_named_as_a_stage_calls_it():
    """A rule file named as a stage (workflow/rules/<stage>.smk) calls `lem <stage> ...` among its commands."""
    rules = SRC.parent / "workflow" / "rules"
    named = [p for p in sorted(rules.glob("*.smk")) if p.stem in cli.STAGES]
    assert len(named) >= 10, named
    for path in named:
        assert f"lem {path.stem} " in path.read_text(encoding="utf-8"), path
