"""src/lem's layers: every import between lem modules points down a layer, or stays within its layer.

Bottom to top:

1. `lem.core` (and the `lem` package itself): the shared pieces that know no stage, the embedding files
   (`lem.core.embeddings`) included.
2. `lem.evidence`: the statistics that know no stage (`stats`, `crossed`, `power`, `simulate`, the chance levels
   of classification and curation, the controls, the declared comparison families and the `evidence`
   settings). It imports `lem.core` only; the stages use it to record chance levels and controls next to their
   values.
3. The stage libraries, which may import a lower stage only, in the order of the data they build on:
   `masking` < `annotate` < `data` < `corpus` < `tokenizer` < `features` < `pretrain` < `stand_in` < `embed` <
   `reference` < `mine` < `curate` < `nmt` < `sentiment`. Two places run against the pipeline's order on
   purpose: annotation's coverage check reads the masking settings (which entity types a variant masks), and
   the data stage's NER split reads CoNLL with the annotators' readers; the corpus generator uses the data
   stage's news layout and leakage key; the lexical control (`embed`) reads the generated lexicon; mining's
   chance level and ceiling call its own margin code (`lem.mine.chance`); curation ranks with the mining
   margin; NMT trains on the top share of a curation ranking with the tokenizer's trainer.
   A single-module stage (`lem.embed`, `lem.curate`, ...) is a library that also declares its `STAGE`.
4. `lem.report`: reads every stage's metrics files, tests the declared comparisons (`lem.report.comparisons`,
   which knows how each task's score follows from its items: `lem.curate.kept_count`, `lem.nmt.bleu`) and
   writes the tables, verdicts and figures.
5. The run's model and planning: `lem.run`, `lem.config_check`, `lem.plan` (`lem plan power` in `lem.plan.power`).
6. The CLI modules: `lem.cli`, `lem.__main__` and every `lem.<stage>.cli` (`lem.report.cli` included). A CLI
   module may import anything below; no module imports a CLI module but `lem.cli` and `lem.__main__`
   (`lem.cli` imports a stage's module by name, when a command names it).

Within a layer (and within one stage) imports may go either way: tests/unit/test_imports.py checks they form no
circle.

Imports sit at the top of a module, but where one inside a function keeps a light entry point light (planning,
`lem --help`, a stage's `--help`) or an optional backend's package out of the other backends: such a module
says why once, in its head (`# Imported inside functions: <what> (<why>)`), and no function imports what its
module imports already (`deferred_import_problems`).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from support.import_graph import GRAPH, MODULES, imports_of

CORE, EVIDENCE, STAGE, REPORT, PLANNING, CLI = range(6)
LAYERS = ("lem.core", "lem.evidence", "stage library", "lem.report", "run and planning", "CLI")
STAGE_ORDER = (
    "masking", "annotate", "data", "corpus", "tokenizer", "features", "pretrain", "stand_in", "embed",
    "reference", "mine", "curate", "nmt", "sentiment",
)  # fmt: skip
PLANNING_MODULES = ("run", "config_check", "plan")
ENTRY = ("lem.cli", "lem.__main__")  # the only modules that may import a CLI module


def is_cli(module: str) -> bool:
    return module in ENTRY or module.rsplit(".", 1)[-1] == "cli"


def layer(module: str) -> tuple[int, int]:
    """(layer, the stage's place in STAGE_ORDER or 0) of a lem module; KeyError for one no layer declares."""
    if is_cli(module):
        return CLI, 0
    top = module.split(".")[1] if "." in module else ""
    if module == "lem" or top == "core":
        return CORE, 0
    if top == "evidence":
        return EVIDENCE, 0
    if top in STAGE_ORDER:
        return STAGE, STAGE_ORDER.index(top)
    if top == "report":
        return REPORT, 0
    if top in PLANNING_MODULES:
        return PLANNING, 0
    raise KeyError(f"{module}: no layer declared (tests/unit/test_layers.py)")


def _where(module: str) -> str:
    n, rank = layer(module)
    return f"stage {STAGE_ORDER[rank]}" if n == STAGE else LAYERS[n]


def upward(graph: dict[str, set[str]]) -> list[str]:
    """Every import of `graph` that climbs a layer (or a stage), or reaches a CLI module from another module
    than lem.cli / lem.__main__, in words."""
    out = []
    for module, imported in sorted(graph.items()):
        for target in sorted(imported):
            if is_cli(target) and module not in ENTRY:
                out.append(f"{module} imports the CLI module {target}")
            elif layer(target) > layer(module):
                out.append(
                    f"{module} ({_where(module)}) imports {target} ({_where(target)}), a layer above it"
                )
    return out


def test_layer_checker_finds_planted_upward_imports(tmp_path):
    fake = {
        "lem.core.files": {"lem.core.inputs"},
        "lem.evidence.stats": {"lem.core.files"},
        "lem.mine.margin": {"lem.evidence.stats", "lem.core.files", "lem.corpus.lexicon"},
        "lem.curate": {"lem.mine.margin"},
        "lem.report.build": {"lem.curate", "lem.evidence.stats"},
        "lem.plan": {"lem.report.build", "lem.config_check"},
        "lem.config_check": {"lem.plan"},
        "lem.data.cli": {"lem.plan", "lem.report.build"},
        "lem.__main__": {"lem.cli"},
    }
    assert upward(fake) == []
    planted = {
        "lem.core.training": {"lem.evidence.stats"},  # core -> evidence
        "lem.evidence.chance": {"lem.mine.margin"},  # evidence -> a stage
        "lem.embed": {"lem.mine"},  # a stage -> a later stage
        "lem.pretrain": {"lem.masking.cli"},  # a library -> a CLI module
        "lem.mine.cli": {"lem.nmt.cli"},  # a CLI module -> another
        "lem.curate": {"lem.report.tables"},  # a stage -> the report
        "lem.report.tables": {"lem.plan.power"},  # the report -> planning
        "lem.run": {"lem.cli"},
    }
    found = upward(planted)
    assert len(found) == len(planted), found
    assert "lem.embed (stage embed) imports lem.mine (stage mine), a layer above it" in found
    assert "lem.pretrain imports the CLI module lem.masking.cli" in found
    with pytest.raises(KeyError, match="no layer declared"):
        layer("lem.newthing")
    # the import walk reads a planted import inside a function too
    path = tmp_path / "margin.py"
    path.write_text("def f():\n    from lem.curate import kept_count\n", encoding="utf-8")
    assert upward({"lem.mine.margin": imports_of("lem.mine.margin", path)}) == [
        "lem.mine.margin (stage mine) imports lem.curate (stage curate), a layer above it"
    ]


def test_every_module_has_a_layer():
    assert len(MODULES) > 60
    unknown = []
    for module in MODULES:
        try:
            layer(module)
        except KeyError as err:
            unknown.append(str(err))
    assert not unknown, unknown


def test_every_import_points_down():
    found = upward(GRAPH)
    assert not found, "\n".join(found)


def test_evidence_imports_no_stage():
    """lem.evidence sits below the stages: statistics only, shared by the stages and the report."""
    outside = sorted(
        f"{m} -> {t}"
        for m, ts in GRAPH.items()
        if m.startswith("lem.evidence")
        for t in ts
        if not t.startswith(("lem.evidence", "lem.core"))
    )
    assert not outside, outside


def test_no_stage_verb_calls_the_config_checker():
    callers = sorted(
        m for m, ts in GRAPH.items() if is_cli(m) and m not in ENTRY and any("config_check" in t for t in ts)
    )
    assert not callers, callers


# --- imports inside functions -----------------------------------------------------------------------------------

NOTE = "# Imported inside functions: "
NOTE_FORM = re.compile(r"Imported inside functions: (?P<what>.+?) \((?P<why>.+)\)")


def _source(module: str, path: Path, node: ast.ImportFrom) -> str:
    """The module a `from ... import` statement of `module` (in file `path`) imports from."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if path.name != "__init__.py":
        base.pop()
    return ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else []))


def _imported(module: str, path: Path, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules an import statement of `module` loads (`from m import n`: m.n when that is a lem module)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    source = _source(module, path, node)
    return sorted({f"{source}.{a.name}" if f"{source}.{a.name}" in MODULES else source for a in node.names})


def _imports(tree: ast.Module) -> tuple[list[ast.Import | ast.ImportFrom], list[ast.Import | ast.ImportFrom]]:
    """(the module's own imports, the imports inside its functions)."""
    top: list[ast.Import | ast.ImportFrom] = []
    inner: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue  # for the type checker alone: nothing is imported when the module runs
            if isinstance(child, ast.Import | ast.ImportFrom):
                (inner if in_function else top).append(child)
            function = isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            visit(child, in_function or function)

    visit(tree, False)
    return top, inner


def deferred_import_problems(module: str, path: Path) -> list[str]:
    """What is wrong with the imports inside the functions of `module`, each naming the module and the line.

    An import sits inside a function only to keep a light entry point light (planning, `lem --help`, a stage's
    `--help`) or an optional backend's package out of the others: the module says so once, in its head, as
    `# Imported inside functions: <what> (<why>)`, <what> naming every module it defers (a package by its name,
    a lem module by its last part). A function never imports what the module imports already."""
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text, filename=str(path))
    top, inner = _imports(tree)
    loaded = {name for node in top for name in _imported(module, path, node)}
    loaded |= {_source(module, path, node) for node in top if isinstance(node, ast.ImportFrom)}
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(NOTE)]
    out = []
    for node in inner:
        again = [name for name in _imported(module, path, node) if name in loaded]
        if again:
            out.append(f"{module}:{node.lineno}: `{ast.unparse(node)}` inside a function: the module imports "
                       f"{', '.join(again)} at its top already")  # fmt: skip
    if not inner:
        return out + [
            f"{module}:{i + 1}: a note on imports inside functions, but there is none" for i in starts
        ]
    if len(starts) != 1:
        where = ", ".join(str(i + 1) for i in starts) or "none"
        return out + [f"{module}:{inner[0].lineno}: `{ast.unparse(inner[0])}` inside a function: the module needs "
                      f"one '{NOTE}<what> (<why>)' in its head (found: {where})"]  # fmt: skip
    first = starts[0]
    end = first + 1
    while end < len(lines) and lines[end].startswith("# "):
        end += 1
    note = " ".join(line[2:] for line in lines[first:end])
    head_ends = min((n.lineno for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)), default=0)
    form = NOTE_FORM.fullmatch(note)
    if not form:
        return out + [f"{module}:{first + 1}: the note is not '{NOTE}<what> (<why>)': {note!r}"]
    if head_ends and first + 1 > head_ends:
        out.append(
            f"{module}:{first + 1}: the note on imports inside functions sits below the first definition"
        )
    for node in inner:
        for name in _imported(module, path, node):
            short = name.split(".")[0] if name.split(".")[0] != "lem" else name.rsplit(".", 1)[-1]
            if not re.search(rf"\b{re.escape(short)}\b", form["what"]):
                out.append(f"{module}:{node.lineno}: `{ast.unparse(node)}` inside a function: the note at line "
                           f"{first + 1} does not name {short}")  # fmt: skip
    return out


def test_deferred_import_checker_finds_planted_problems(tmp_path):
    good = tmp_path / "good.py"
    good.write_text(
        "import json\nfrom typing import TYPE_CHECKING\n\nfrom lem.core import files\n\n"
        "# Imported inside functions: torch and lem.annotate.run, which loads pyarrow (planning needs\n"
        "# neither)\n\nif TYPE_CHECKING:\n    from lem.annotate.run import Annotator\n\n\n"
        "def f() -> Annotator:\n    import torch\n    from lem.annotate.run import chunks\n\n"
        "    return torch, chunks, json, files\n",
        encoding="utf-8",
    )
    assert deferred_import_problems("lem.good", good) == []
    planted = {
        "def f():\n    import torch\n": "needs one '# Imported inside functions: <what> (<why>)' in its head",
        "import json\n\n\ndef f():\n    import json\n": "the module imports json at its top already",
        "from lem.core.files import write_json\n\n\ndef f():\n    from lem.core.files import read_json\n":
            "imports lem.core.files at its top already",
        "from lem.core import files\n\n\ndef f():\n    import lem.core.files\n": "lem.core.files at its top",
        "# Imported inside functions: torch (planning)\n\n\ndef f():\n    return 1\n": "but there is none",
        "# Imported inside functions: torch, for planning\n\n\ndef f():\n    import torch\n": "the note is not",
        "# Imported inside functions: torch (planning)\n\n\ndef f():\n    import faiss\n": "does not name faiss",
        "def f():\n    import torch\n\n\n# Imported inside functions: torch (planning)\n": "below the first definition",
        "# Imported inside functions: lem.annotate.run (pyarrow)\n\n\ndef f():\n    from lem.annotate import crf\n":
            "does not name crf",
    }  # fmt: skip
    for source, problem in planted.items():
        path = tmp_path / "planted.py"
        path.write_text(source, encoding="utf-8")
        found = deferred_import_problems("lem.mine.planted", path)
        assert any(problem in f for f in found), (source, found)
        assert all(f.startswith("lem.mine.planted:") for f in found), found


def test_every_import_inside_a_function_is_explained():
    found = [
        problem for module, path in MODULES.items() for problem in deferred_import_problems(module, path)
    ]
    assert not found, "\n".join(found)
