"""The declared comparisons: the config's `evidence` section (families, alpha, confidence, power, margins) and
the comparisons it declares among a run's rows (`lem.report.comparisons` tests them).

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
import math
from collections.abc import Mapping
from typing import Any

REFERENCE = "mlm_tlm"
TASKS = ("mining", "sentiment", "curation", "nmt")
FAMILIES = ("primary", "secondary", "exploratory")
VERDICTS = ("higher", "lower", "equivalent", "inconclusive")
DEFAULT_EVIDENCE: dict[str, Any] = {
    "alpha": 0.05,
    "confidence": 0.95,
    "power": 0.8,
    "margin": {"mining": 0.02, "sentiment": 0.02, "curation": 0.02, "nmt": 1.0},
    "families": {
        "primary": [{"a": "lem*", "b": "mlm_tlm", "tasks": ["mining"]}],
        "secondary": [{"a": "lem*", "b": "mlm_tlm", "tasks": ["sentiment", "curation", "nmt"]}],
        "exploratory": [{"a": "mlm_tlm", "b": "base", "tasks": list(TASKS)}],
    },
}


def evidence_settings(raw: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The config's `evidence` section over `DEFAULT_EVIDENCE` (a family or margin given replaces the
    default's), checked: a problem raises ValueError naming the key."""
    raw = dict(raw or {})
    unknown = sorted(set(raw) - set(DEFAULT_EVIDENCE))
    if unknown:
        raise ValueError(f"evidence.{unknown[0]}: unknown key (expected one of {sorted(DEFAULT_EVIDENCE)})")
    out = {**DEFAULT_EVIDENCE, **raw}
    out["margin"] = {**DEFAULT_EVIDENCE["margin"], **(raw.get("margin") or {})}
    for key in ("alpha", "confidence", "power"):
        v = out[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < 1:
            raise ValueError(f"evidence.{key}: {v!r}: expected a probability strictly between 0 and 1")
    for task, m in out["margin"].items():
        if task not in TASKS:
            raise ValueError(f"evidence.margin.{task}: unknown task (expected one of {list(TASKS)})")
        if isinstance(m, bool) or not isinstance(m, (int, float)) or not (m > 0 and math.isfinite(m)):
            raise ValueError(
                f"evidence.margin.{task}: {m!r}: expected a finite number > 0 (in the metric's units)"
            )
    families = out["families"]
    if not isinstance(families, Mapping):
        raise ValueError(
            "evidence.families: expected a mapping {primary|secondary|exploratory: [comparisons]}"
        )
    for name, specs in families.items():
        if name not in FAMILIES:
            raise ValueError(f"evidence.families.{name}: unknown family (expected one of {list(FAMILIES)})")
        for i, spec in enumerate(specs or []):
            where = f"evidence.families.{name}[{i}]"
            if (
                not isinstance(spec, Mapping)
                or not {"a", "b", "tasks"} <= set(spec)
                or set(spec) - {"a", "b", "tasks"}
            ):
                raise ValueError(f"{where}: expected {{a: <variant or pattern>, b: <variant>, tasks: [...]}}")
            bad = [t for t in spec["tasks"] if t not in TASKS]
            if bad or not spec["tasks"]:
                raise ValueError(f"{where}.tasks: {bad or '[]'}: expected one or more of {list(TASKS)}")
    return out


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


def comparisons_of(variants: list[str], families: Mapping[str, list] | None = None) -> list[tuple[str, str]]:
    """The (a, b) pairs the declared families compare among `variants` (any task), in order."""
    fam = families if families is not None else DEFAULT_EVIDENCE["families"]
    out: list[tuple[str, str]] = []
    for _, a, b, _ in declared(variants, fam):
        if (a, b) not in out:
            out.append((a, b))
    return out
