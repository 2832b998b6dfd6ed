"""The checked config sections (`SECTIONS`: each read by one settings dataclass) and `build`, which builds one
section's dataclass as a rule passes it and names the key of any problem."""

from __future__ import annotations

import copy
import dataclasses
import importlib
import sys
from dataclasses import dataclass
from typing import Any

from lem.annotate.settings import BACKENDS
from lem.config_check.errors import ConfigError, _one_line
from lem.core.settings import describe, field_hints, misfit, type_ok
from lem.run.settings import section_merges


@dataclass(frozen=True)
class Section:
    """A config section (a key path; `<name>` stands for any entry) read by one settings dataclass.

    `injected`: keys the rule adds before the section's own keys (the section may override them) ->
    where their value comes from; `overridden`: keys the rule sets after them (so the section must not set
    them) -> where their value comes from: both read from the accounts of the rules' settings functions
    (lem.run.settings.SETTINGS)."""

    path: str
    settings: str  # "module:Class", the public import path
    verb: str

    @property
    def injected(self) -> dict[str, str]:
        return section_merges(self.path)[0]

    @property
    def overridden(self) -> dict[str, str]:
        return section_merges(self.path)[1]

    @property
    def cls(self) -> type:
        module, name = self.settings.split(":")
        return getattr(importlib.import_module(module), name)

    @property
    def label(self) -> str:
        return f"{self.settings.replace(':', '.')}, `{self.verb}`"


TRAINING = "lem.pretrain:PretrainTrainingSettings"
ANNOTATE = "lem.annotate.settings:AnnotateSettings"

SECTIONS: tuple[Section, ...] = (
    Section("corpus.generate", "lem.corpus.generate:GenerateSettings", "lem corpus generate"),
    Section("annotation.<lang>", ANNOTATE, "lem annotate run"),
    Section("annotation_eval.annotators.<name>", ANNOTATE, "lem annotate run"),
    Section("annotation_coverage", "lem.annotate.coverage:CoverageSettings", "lem annotate coverage"),
    Section("leakage", "lem.data.leakage:LeakageSettings", "lem data leakage"),
    Section(
        "mining.evalsets.<name>.leakage", "lem.data.leakage:EvalLeakageSettings", "lem data leakage-items"
    ),
    Section("ner_model.settings", "lem.annotate.hf_ner:TrainNERSettings", "lem annotate train-ner"),
    Section("sources.madlad.settings", "lem.data.madlad:MadladSettings", "lem data madlad"),
    Section("sources.multiner.settings", "lem.data.ner:MultinerSettings", "lem data multiner"),
    Section("base_model.model", "lem.pretrain:ModelSettings", "lem pretrain base"),
    Section("base_model.training", TRAINING, "lem pretrain base"),
    Section("pretrain.stages.<stage>.training", TRAINING, "lem pretrain continue"),
    Section("pretrain.variants.<name>", "lem.masking.collate:MaskingSettings", "lem pretrain continue"),
    Section("embedding", "lem.embed:EmbedSettings", "lem embed encode"),
    Section("mining.settings", "lem.mine:MineSettings", "lem mine run"),
    Section(
        "sentiment.datasets.<name>.prepare", "lem.data.sentiment:SentimentDataSettings", "lem data sentiment"
    ),
    Section("sentiment.training", "lem.sentiment:SentimentSettings", "lem sentiment finetune"),
    Section("curation.filters", "lem.data.webmined:FilterSettings", "lem curate prepare"),
    Section("curation.settings", "lem.curate:CurationSettings", "lem curate rank"),
    Section("reference_encoders.<name>.settings", "lem.reference:RefEncoderSettings", "lem reference encode"),
    Section("curation.nmt.settings", "lem.nmt.settings:NMTSettings", "lem nmt run"),
    Section("evidence", "lem.evidence.compare:EvidenceSettings", "lem report build"),
    Section("controls", "lem.evidence.controls:ControlSettings", "lem report build"),
)
SECTION = {s.path: s for s in SECTIONS}

# Keys that the rule replaces but that a config may still carry (config/config.yaml, with the same value):
# a warning on stderr when they differ, not an error (the settings of rule pretrain_base, lem.run, build the base
# model for pretrain.max_length).
WARN_ONLY = {("base_model.model", "max_length")}


# --- types from the dataclass annotations (lem.core.settings: type_ok, describe) ----------------------------


def type_problems(obj: Any, where: dict[str, str]) -> list[str]:
    """'path: expected ..., got ...' for every field of dataclass `obj` whose value does not fit its
    annotation; `where` maps a field to the config key it came from (fields not in it are defaults)."""
    out = []
    hints = field_hints(type(obj))
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if f.name not in where or f.name not in hints:
            continue
        if dataclasses.is_dataclass(hints[f.name]) and dataclasses.is_dataclass(value):
            sub = {g.name: f"{where[f.name]}.{g.name}" for g in dataclasses.fields(value)}
            out += type_problems(value, sub)
        elif not type_ok(value, hints[f.name]):
            out.append(f"{where[f.name]}: expected {describe(hints[f.name])}, got {value!r}")
    return out


# --- building one section --------------------------------------------------------------------------------


def _unknown_task_keys(path: str, data: dict) -> None:
    """annotation: `pos` / `ner` keys the chosen backend does not take (lem.annotate.settings.BACKENDS)."""
    for task in ("pos", "ner"):
        spec = data.get(task)
        backend = spec.get("backend", "none") if isinstance(spec, dict) else None
        if backend not in BACKENDS or task not in BACKENDS[backend][0]:
            continue  # not a mapping, an unknown backend or one that does not do the task: from_dict says so
        known = sorted(BACKENDS[backend][1] | {"backend"})
        for key in spec:
            if key not in known:
                raise ConfigError(
                    f"{path}.{task}.{key}: unknown key for backend {backend!r}; known: {', '.join(known)} "
                    f"({SECTION['annotation.<lang>'].label})"
                )


def build(
    section: Section,
    path: str,
    data: Any,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
    sources: dict[str, str] | None = None,
) -> Any:
    """The dataclass of `section` built from `{**before, **data, **after}`, as the rule passes it to its
    `lem` verb; `path` is where `data` sits in the config, `sources` names the config key of each value of
    `before` / `after`. Raises ConfigError naming the key."""
    cls, label = section.cls, section.label
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping, got {data!r} ({label})")
    before, after, sources = dict(before or {}), dict(after or {}), dict(sources or {})
    names = [f.name for f in dataclasses.fields(cls)]
    known = [n for n in sorted(names) if n not in section.overridden]
    for key in data:
        if key in section.overridden:
            if (section.path, key) in WARN_ONLY:
                if data[key] != after.get(key, data[key]):
                    print(
                        f"warning: {path}.{key}: {data[key]!r} is ignored: the rule sets it from "
                        f"{sources.get(key, section.overridden[key])} ({after.get(key)!r})",
                        file=sys.stderr,
                    )
                continue
            source = sources.get(key, section.overridden[key])
            raise ConfigError(
                f"{path}.{key}: not read from here: the rule sets it from {source}; drop it ({label})"
            )
        if key not in names:
            raise ConfigError(f"{path}.{key}: unknown key; known: {', '.join(known)} ({label})")
    if section.settings == ANNOTATE:
        _unknown_task_keys(path, data)
    merged = {**before, **data, **after}
    where = {k: sources.get(k, k) for k in {**before, **after}}
    where.update({k: f"{path}.{k}" for k in data})
    try:
        obj = cls.from_dict(copy.deepcopy(merged))
    except (ValueError, TypeError, KeyError, AttributeError) as err:
        entry = _entry_message(err, cls, data, path)
        if entry:
            raise ConfigError(f"{entry} ({label})") from err
        hints = field_hints(cls)
        for key, value in merged.items():
            bad = misfit(value, hints[key]) if key in hints else None
            if bad:
                suffix, got, expected = bad
                raise ConfigError(
                    f"{where[key]}{suffix}: expected {expected}, got {got!r} ({label})"
                ) from err
        raise ConfigError(
            f"{_culprits(cls, data, before, after, path, err)}: {_one_line(err)} ({label})"
        ) from err
    problems = type_problems(obj, where)
    if problems:
        raise ConfigError(f"{problems[0]} ({label})")
    return obj


def _entry_message(err: BaseException, cls: type, data: dict, path: str) -> str | None:
    """A settings class's own message about one entry of a key the config wrote (`<section>: key.entry: ...`,
    e.g. corpus settings' `noisy_extra_pairs.si-en: expected an integer count ...`), under the config's path."""
    section = f"{getattr(cls, 'SECTION', '')}: "
    text = _one_line(err)
    rest = text[len(section) :] if text.startswith(section) else None
    for key in data if rest else ():
        if isinstance(key, str) and rest.startswith((f"{key}.", f"{key}:")):
            return f"{path}.{rest}"
    return None


def _culprits(cls: type, data: dict, before: dict, after: dict, path: str, err: BaseException) -> str:
    """The keys of `data` that the dataclass refuses on their own (the others at their defaults), or the
    section's path when none does alone (a combination is refused)."""
    message = _one_line(err).removeprefix(f"{getattr(cls, 'SECTION', '')}: ")
    named = [k for k in data if isinstance(k, str) and message.startswith(f"{k}=")]
    if named:  # the dataclass names the key (`other_share=0.1: not used by strategy 'standard'`)
        return f"{path}.{named[0]}"
    base = {**before, **after}
    try:
        cls.from_dict(copy.deepcopy(base))
    except Exception:  # the defaults alone fail: no single key to blame
        return path
    bad = []
    for key, value in data.items():
        try:
            cls.from_dict(copy.deepcopy({**before, key: value, **after}))
        except Exception:  # any failure blames the key
            bad.append(f"{path}.{key}")
    return ", ".join(bad) or path
