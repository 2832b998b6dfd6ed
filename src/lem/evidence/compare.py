"""The declared comparisons: the config's `evidence` section (`EvidenceSettings`: families, alpha, confidence,
power, margins; its defaults written here alone) and the comparisons it declares among a run's rows (`lem.report.comparisons` tests them).

What is compared is declared before the run (config `evidence.families`), never chosen by the data:
- *primary*: the paper's question, by default each `lem*` variant against `mlm_tlm` on mining
  intersection F1;
- *secondary*: the other tasks (sentiment macro-F1, curation precision, NMT BLEU) for the same pairs;
- *exploratory*: the checks and ablations, by default `mlm_tlm` against `base` on every task (the criterion
  the generated world was tuned on, so never a finding).
Holm's correction runs within each family over every comparison the family declares for the run's cells; a
comparison left untested still counts in its family's size. A comparison's verdict is one of `VERDICTS`.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lem.core.settings import Settings, SettingsError

REFERENCE = "mlm_tlm"
TASKS = ("mining", "sentiment", "curation", "nmt")
FAMILIES = ("primary", "secondary", "exploratory")
VERDICTS = ("higher", "lower", "equivalent", "inconclusive")


def default_families() -> dict[str, list[dict[str, Any]]]:
    """The declared families when the config names none: each `lem*` row against `mlm_tlm` (mining primary,
    the other tasks secondary), `mlm_tlm` against `base` on every task (exploratory)."""
    return {
        "primary": [{"a": "lem*", "b": "mlm_tlm", "tasks": ["mining"]}],
        "secondary": [{"a": "lem*", "b": "mlm_tlm", "tasks": ["sentiment", "curation", "nmt"]}],
        "exploratory": [{"a": "mlm_tlm", "b": "base", "tasks": list(TASKS)}],
    }


@dataclass(frozen=True)
class Margins(Settings):
    """The equivalence margin of each task, in the metric's units (F1, macro-F1 and precision in [0, 1]; BLEU
    in points): TOST against +-margin. A task the config leaves out keeps its default."""

    SECTION = "evidence margin"

    mining: float = 0.02
    sentiment: float = 0.02
    curation: float = 0.02
    nmt: float = 1.0

    def validate(self) -> None:
        for task in TASKS:
            if not getattr(self, task) > 0:
                raise self.refused(task, "a finite number > 0 (in the metric's units)")


@dataclass(frozen=True)
class EvidenceSettings(Settings):
    """The config's `evidence` section, its defaults written here alone (the schema's are checked against
    them, tests/planning/test_config_sections.py): each family's level `alpha` (Holm within the family), the
    intervals' `confidence`, the `power` of the minimum detectable difference, the equivalence `margin` per
    task (a task left out keeps its default) and the declared comparison `families` (given, they replace the
    default families)."""

    SECTION = "evidence"

    alpha: float = 0.05
    confidence: float = 0.95
    power: float = 0.8
    margin: Margins = field(default_factory=Margins)
    families: dict[str, list] = field(default_factory=default_families)

    def validate(self) -> None:
        for key in ("alpha", "confidence", "power"):
            if not 0 < getattr(self, key) < 1:
                raise self.refused(key, "a probability strictly between 0 and 1")
        for name, specs in self.families.items():
            if name not in FAMILIES:
                raise SettingsError(
                    f"evidence: families.{name}: unknown family (expected one of {list(FAMILIES)})"
                )
            for i, spec in enumerate(specs or []):
                where = f"evidence: families.{name}[{i}]"
                if (
                    not isinstance(spec, Mapping)
                    or not {"a", "b", "tasks"} <= set(spec)
                    or set(spec) - {"a", "b", "tasks"}
                ):
                    raise SettingsError(
                        f"{where}: expected {{a: <variant or pattern>, b: <variant>, tasks: [...]}}"
                    )
                bad = [t for t in spec["tasks"] if t not in TASKS]
                if bad or not spec["tasks"]:
                    raise SettingsError(
                        f"{where}.tasks: {bad or '[]'}: expected one or more of {list(TASKS)}"
                    )

    def margin_of(self, task: str) -> float:
        """The equivalence margin of `task`, in its metric's units."""
        return float(getattr(self.margin, task))


def declared(variants: list[str], families: Mapping[str, list]) -> list[tuple[str, str, str, str]]:
    """(family, a, b, task) for every comparison the config declares among the run's rows, in the families'
    order; `a` may be a pattern (`lem*`), `b` names a row. A comparison declared twice is refused (it would sit
    in two families' corrections)."""
    out, seen = [], {}
    for family in FAMILIES:
        for spec in families.get(family) or []:
            if spec["b"] not in variants:
                continue
            for a in variants:
                if a == spec["b"] or not fnmatch.fnmatchcase(a, spec["a"]):
                    continue
                for task in spec["tasks"]:
                    key = (a, spec["b"], task)
                    if key in seen:
                        raise ValueError(
                            f"evidence.families: {a} vs {spec['b']} on {task} is declared in {seen[key]} and in "
                            f"{family} (a comparison belongs to one family)"
                        )
                    seen[key] = family
                    out.append((family, a, spec["b"], task))
    return out
