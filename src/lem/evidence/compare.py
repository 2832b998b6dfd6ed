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
# the smallest family-wise level: below it the t quantile at a family's Holm threshold (1 - alpha / m / 2) is
# beyond double precision (at 1e-300 the minimum detectable difference's search never ended)
ALPHA_MIN = 1e-6


def default_families() -> dict[str, list[dict[str, Any]]]:
    """The declared families when the config names none: each `lem*` row against `mlm_tlm` (mining primary,
    the other tasks secondary), `mlm_tlm` against `base` on every task (exploratory)."""
    return {
        "primary": [{"a": "lem*", "b": "mlm_tlm", "tasks": ["mining"]}],
        "secondary": [{"a": "lem*", "b": "mlm_tlm", "tasks": ["sentiment", "curation", "nmt"]}],
        "exploratory": [{"a": "mlm_tlm", "b": "base", "tasks": list(TASKS)}],
    }


def merged_families(given: Mapping[str, Any]) -> dict[str, Any]:
    """The families of a config's `evidence.families`: a family given replaces that family's default, a family
    left out keeps its default (config/README.md), in the order of FAMILIES (an unknown name kept, for
    `EvidenceSettings.validate` to refuse). `secondary: []` declares no secondary comparison."""
    defaults = default_families()
    merged: dict[str, Any] = {f: given[f] if f in given else defaults[f] for f in FAMILIES}
    merged.update((name, spec) for name, spec in given.items() if name not in FAMILIES)
    return merged


def is_default(family: str, specs: Any) -> bool:
    """Whether `specs` is `family`'s default (written or not): the default families apply to the rows and tasks
    a run has (no `lem*` variant: no primary comparison), whereas a family the config writes is checked entry by
    entry (`check_declared`)."""
    return family in FAMILIES and specs == default_families()[family]


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
    task (a task left out keeps its default) and the declared comparison `families` (a family given replaces
    that family's default; one left out keeps it: `merged_families`)."""

    SECTION = "evidence"

    alpha: float = 0.05
    confidence: float = 0.95
    power: float = 0.8
    seeds_declared: int | None = None
    margin: Margins = field(default_factory=Margins)
    families: dict[str, list] = field(default_factory=default_families)

    @classmethod
    def prepare(cls, data: dict[str, Any]) -> dict[str, Any]:
        """The families given merged over the default ones (`merged_families`)."""
        if isinstance(data.get("families"), Mapping):
            data["families"] = merged_families(data["families"])
        return data

    def validate(self) -> None:
        for key in ("alpha", "confidence", "power"):
            if not 0 < getattr(self, key) < 1:
                raise self.refused(key, "a probability strictly between 0 and 1")
        if self.seeds_declared is not None and self.seeds_declared < 2:
            raise self.refused("seeds_declared", "a number of pre-training seeds of at least 2, or null")
        if self.alpha < ALPHA_MIN:
            raise self.refused(
                "alpha",
                f"a level of at least {ALPHA_MIN:g} (below it the t quantile at a family's Holm threshold is "
                "beyond double precision)",
            )
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


PATTERN_CHARS = set("*?[")  # fnmatch's


def declared(variants: list[str], families: Mapping[str, list]) -> list[tuple[str, str, str, str]]:
    """(family, a, b, task) for every comparison the config declares among the run's rows, in the families'
    order; `a` may be a pattern (`lem*`), `b` names a row. A comparison of rows the run lacks is left out (the
    config check, `check_declared`, refuses it in a family the config writes). A pair declared twice, in either
    order and in any family, is refused: it would be tested twice, in two corrections (or twice in one)."""
    out, seen = [], {}
    for family in FAMILIES:
        default = ", a default family" if is_default(family, families.get(family) or []) else ""
        for i, spec in enumerate(families.get(family) or []):
            if spec["b"] not in variants:
                continue
            for a in variants:
                if a == spec["b"] or not fnmatch.fnmatchcase(a, spec["a"]):
                    continue
                for task in spec["tasks"]:
                    key = (*sorted((a, spec["b"])), task)
                    if key in seen:
                        first, (fa, fb) = seen[key]
                        here = f"{family}[{i}]{default}"
                        if (fa, fb) != (a, spec["b"]):
                            raise ValueError(
                                f"evidence.families: {a} vs {spec['b']} on {task} ({here}) is {fa} vs {fb} on {task} "
                                f"({first}) reversed: a pair is compared once, in one family (its reverse is "
                                "the same test); drop one"
                            )
                        where = (
                            f"twice in {family} ({first}, {here})"
                            if first.partition("[")[0] == family
                            else f"in {first.partition('[')[0]} and in {family} ({first}, {here})"
                        )
                        raise ValueError(
                            f"evidence.families: {a} vs {spec['b']} on {task} is declared {where}: a comparison "
                            "belongs to one family, once; drop one"
                        )
                    seen[key] = (f"{family}[{i}]{default}", (a, spec["b"]))
                    out.append((family, a, spec["b"], task))
    return out


def _no_row(key: str, name: str, seedless: Mapping[str, str], known: str) -> str:
    if name in seedless:
        return (
            f"{key}: {name!r} is {seedless[name]}, a row without pre-training seeds: the two-level test pairs "
            "seeds, so it would never run; compare variants (controls have their own verdicts)"
        )
    return f"{key}: {name!r} is no variant of the run ({known}): the comparison would never run"


def check_declared(
    families: Mapping[str, list],
    variants: list[str],
    seedless: Mapping[str, str],
    rows: list[str],
    off: Mapping[str, str],
) -> None:
    """Every comparison a family the config writes declares is one the run makes, or ValueError in one line
    naming the family's entry (`evidence.families.<family>[i].<key>`) and the variant or task that is not there:
    `b` names one variant of `variants` (no pattern, no seedless row: `seedless` maps a control's or reference
    encoder's row to what it is); `a` names another variant, or a pattern matching at least one variant besides
    `b` and no row of `rows` (the report's rows) that is seedless; each task runs (`off`: task -> why not). The
    default families (`is_default`) apply to what the run has. Then `declared`: no pair declared twice."""
    known = f"variants: {', '.join(variants) or 'none'}"
    for family in FAMILIES:
        specs = families.get(family) or []
        if is_default(family, specs):
            continue
        for i, spec in enumerate(specs):
            at = f"evidence.families.{family}[{i}]"
            a, b = spec["a"], spec["b"]

            if PATTERN_CHARS & set(b):
                raise ValueError(
                    f"{at}.b: {b!r} is a pattern: expected one variant, the reference (`a` may be a pattern; {known})"
                )
            if b not in variants:
                raise ValueError(_no_row(f"{at}.b", b, seedless, known))
            if PATTERN_CHARS & set(a):
                matched = [v for v in variants if v != b and fnmatch.fnmatchcase(v, a)]
                if not matched:
                    raise ValueError(
                        f"{at}.a: {a!r} matches no variant besides b ({b}; {known}): the comparison would never run"
                    )
                extra = [r for r in rows if r in seedless and fnmatch.fnmatchcase(r, a)]
                if extra:
                    raise ValueError(
                        f"{at}.a: {a!r} also matches {extra[0]}, {seedless[extra[0]]}, a row of the report without "
                        "pre-training seeds: narrow the pattern to variants"
                    )
            elif a == b:
                raise ValueError(f"{at}.a: {a!r} is b itself: expected another variant ({known})")
            elif a not in variants:
                raise ValueError(_no_row(f"{at}.a", a, seedless, known))
            for task in spec["tasks"]:
                if task in off:
                    raise ValueError(
                        f"{at}.tasks: {task!r} does not run in this config ({off[task]}): {a} vs {b} on {task} would "
                        "never be tested; drop the task or configure it"
                    )
    declared(variants, families)
