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
"""

from __future__ import annotations

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
