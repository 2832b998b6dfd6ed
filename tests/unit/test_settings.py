"""The one settings base (`lem.core.settings.Settings`): unknown keys, types from the annotations, nested settings,
the `prepare` and `validate` hooks; the trainers' shared `lem.core.training.TrainingSettings`; every settings class
built from its section of the shipped configs; every verb's `--settings` built by `lem.core.stage`."""

from __future__ import annotations

import dataclasses
import importlib
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from lem import cli
from lem.core.settings import Settings, SettingsByName, SettingsError, describe, field_hints, type_ok
from lem.core.training import TrainingSettings

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src" / "lem"


@dataclass(frozen=True)
class Inner(Settings):
    SECTION = "inner settings"

    size: int = 1
    share: float = 0.5

    def validate(self) -> None:
        if self.size < 1:
            raise self.refused("size", "an integer >= 1")


@dataclass(frozen=True)
class Outer(Settings):
    SECTION = "outer settings"
    KEY_ORDER = ("names", "inner", "label", "limit")

    label: str = "x"
    limit: int | None = None
    names: tuple[str, ...] = ("a",)
    inner: Inner = field(default_factory=Inner)

    @classmethod
    def prepare(cls, data):
        if isinstance(data.get("names"), str):  # one name for a list of one
            data["names"] = (data["names"],)
        return data


def test_defaults_and_a_full_mapping_build():
    assert Outer.from_dict(None) == Outer.from_dict({}) == Outer()
    s = Outer.from_dict({"label": "y", "limit": 3, "names": ["b", "c"], "inner": {"size": 2, "share": 1}})
    assert s == Outer("y", 3, ("b", "c"), Inner(2, 1))
    assert type(s.inner.share) is int  # an int for a float field is kept as given: outputs unchanged


def test_an_unknown_key_is_refused_naming_it_and_the_known_ones():
    with pytest.raises(SettingsError, match=r"outer settings: unknown key\(s\) \['lable'\] for Outer; expected some "
                       r"of \['inner', 'label', 'limit', 'names'\]"):  # fmt: skip
        Outer.from_dict({"lable": "y"})
    with pytest.raises(SettingsError, match=r"outer settings: inner: unknown key\(s\) \['sise'\]"):
        Outer.from_dict({"inner": {"sise": 2}})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"label": 3}, "outer settings: label=3: expected a string"),
        ({"limit": "3"}, "outer settings: limit='3': expected an integer or null"),
        ({"limit": True}, "outer settings: limit=True: expected an integer or null"),
        ({"limit": 2.5}, "outer settings: limit=2.5: expected an integer or null"),
        ({"names": [1]}, r"outer settings: names=\(1,\): expected a list of strings"),
        ({"inner": 4}, "outer settings: inner=4: expected a mapping"),
        ({"inner": {"share": "half"}}, "outer settings: inner: share='half': expected a number"),
        ({"inner": {"share": False}}, "outer settings: inner: share=False: expected a number"),
        ({"inner": {"size": 0}}, r"outer settings: inner: size=0: expected an integer >= 1"),
    ],
)
def test_a_wrong_type_or_value_is_refused_naming_the_key(data, message):
    with pytest.raises(SettingsError, match=message):
        Outer.from_dict(data)


def test_type_ok_takes_a_mapping_for_nested_settings_only_as_a_raw_config_value():
    """lem.config_check checks the config's values before building: there a nested settings field holds a
    mapping, which the built object's check refuses."""
    hints = field_hints(Outer)
    assert type_ok(Inner(), hints["inner"]) and not type_ok({"size": 2}, hints["inner"])
    assert type_ok({"size": 2}, hints["inner"], mapping_ok=True)
    assert type_ok({"x": {"size": 2}}, dict[str, Inner], mapping_ok=True)
    assert not type_ok([1], hints["inner"], mapping_ok=True)
    assert not type_ok({"size": 2}, int | None, mapping_ok=True)
    assert describe(hints["inner"]) == "a mapping" and describe(hints["limit"]) == "an integer or null"


def test_a_nested_check_names_where_the_settings_sit():
    with pytest.raises(SettingsError, match=r"^inner settings: size=0: expected an integer >= 1$"):
        Inner.from_dict({"size": 0})  # at the top: the section's own name
    with pytest.raises(SettingsError, match=r"^outer settings: inner: size=0: expected an integer >= 1$"):
        Outer.from_dict({"inner": {"size": 0}})


def test_a_non_mapping_is_refused():
    with pytest.raises(SettingsError, match=r"outer settings: expected a mapping, got \[1\]"):
        Outer.from_dict([1])  # type: ignore[arg-type]


def test_prepare_expands_shorthands_and_to_dict_gives_json_values_in_key_order():
    s = Outer.from_dict({"names": "b"})
    assert s.names == ("b",)
    d = s.to_dict()
    assert list(d) == ["names", "inner", "label", "limit"]
    assert d == {"names": ["b"], "inner": {"size": 1, "share": 0.5}, "label": "x", "limit": None}
    assert Outer.from_dict(d) == s


def test_settings_by_name_builds_each_entry():
    by_name = SettingsByName(Inner)
    assert by_name.from_dict({"si": {"size": 2}, "en": {}}) == {"si": Inner(2), "en": Inner()}
    with pytest.raises(SettingsError, match="inner settings: si: unknown key"):
        by_name.from_dict({"si": {"sise": 0}})
    with pytest.raises(SettingsError, match="inner settings: si: size=0: expected"):
        by_name.from_dict({"si": {"size": 0}})
    with pytest.raises(SettingsError, match="expected a mapping of name -> settings"):
        by_name.from_dict([])  # type: ignore[arg-type]


# --- the trainers ---------------------------------------------------------------------------------------------

TRAINERS = {
    "lem.pretrain:PretrainTrainingSettings": {"epochs": 1.0, "batch_size": 32, "learning_rate": 5e-5, "weight_decay": 0.0,
                                   "precision": "auto", "warmup_ratio": 0.0, "seed": 13, "max_steps": -1},
    "lem.sentiment:SentimentSettings": {"epochs": 10.0, "batch_size": 32, "learning_rate": 5e-5,
                                        "weight_decay": 0.01, "precision": "auto", "warmup_ratio": 0.1,
                                        "max_length": None},
    "lem.annotate.hf_ner:TrainNERSettings": {"epochs": 3.0, "batch_size": 16, "learning_rate": 5e-5,
                                             "weight_decay": 0.0, "precision": "fp16", "warmup_ratio": 0.0,
                                             "seed": 0, "max_length": 128},
    "lem.nmt.settings:NMTSettings": {"epochs": 30.0, "batch_size": 32, "learning_rate": 2e-3, "weight_decay": 0.0,
                            "precision": "auto", "warmup": 0.1, "seed": 13, "max_steps": 1000, "max_length": 64},
}  # fmt: skip


def _cls(name: str) -> type:
    module, attr = name.split(":")
    return getattr(importlib.import_module(module), attr)


@pytest.mark.parametrize("name", sorted(TRAINERS))
def test_every_trainer_extends_training_settings_and_keeps_its_defaults(name):
    cls = _cls(name)
    assert issubclass(cls, TrainingSettings)
    s = cls.from_dict({})
    assert {k: getattr(s, k) for k in TRAINERS[name]} == TRAINERS[name]
    for bad, words in (({"epochs": 0}, "epochs=0"), ({"batch_size": 0}, "batch_size=0"),
                       ({"learning_rate": 0}, "learning_rate=0"), ({"weight_decay": -1}, "weight_decay=-1"),
                       ({"precision": "fp8"}, "precision='fp8'"), ({"batch_size": 2.0}, "batch_size=2.0")):  # fmt: skip
        with pytest.raises(SettingsError, match=re.escape(words)):
            cls.from_dict(bad)


def test_trainer_settings_files_keep_their_key_order():
    """NMT's metrics.json / nmt.json and NER's train_metrics.json record the settings in the order they had
    before the shared base (so the same values give the same bytes)."""
    from lem.annotate.hf_ner import TrainNERSettings
    from lem.nmt.settings import NMTSettings

    assert list(TrainNERSettings().to_dict()) == [
        "epochs", "learning_rate", "batch_size", "max_length", "warmup_ratio", "weight_decay", "seed", "device",
        "on_error", "precision",
    ]  # fmt: skip
    nmt = list(NMTSettings().to_dict())
    assert nmt[:2] == ["backend", "vocab_size"] and nmt[-3:] == ["device", "precision", "threads"]
    for cls in (TrainNERSettings, NMTSettings):
        assert sorted(cls.KEY_ORDER) == sorted(f.name for f in dataclasses.fields(cls))


# --- every class, from the shipped configs ---------------------------------------------------------------------


def _sections(config: dict, path: str) -> list[tuple[str, object]]:
    """(key path, value) of every config entry at `path`, `<name>` matching any key."""
    found = [("", config)]
    for part in path.split("."):
        nxt = []
        for where, node in found:
            if not isinstance(node, dict):
                continue
            keys = list(node) if part.startswith("<") else [part] if part in node else []
            nxt += [(f"{where}.{k}".lstrip("."), node[k]) for k in keys]
        found = nxt
    return found


@pytest.mark.parametrize("configfile", ["config.yaml", "paper.yaml"])
def test_every_settings_section_of_the_shipped_configs_builds(configfile):
    from lem.config_check import SECTIONS

    config = yaml.safe_load((REPO / "config" / configfile).read_text(encoding="utf-8"))
    built = 0
    for section in SECTIONS:
        cls = section.cls
        assert issubclass(cls, Settings), section.settings
        for where, data in _sections(config, section.path):
            s = cls.from_dict(data, where)
            assert isinstance(s, cls)
            built += 1
    assert built >= 15


def test_from_dict_is_written_once():
    """Every settings dataclass builds through `lem.core.settings.Settings.from_dict`: no copy of it, and no
    hand-written unknown-key check, anywhere else in src/lem."""
    offenders = []
    for path in SRC.rglob("*.py"):
        if path.name == "settings.py" and path.parent == SRC / "core":
            continue
        text = path.read_text(encoding="utf-8")
        for pattern in ("def from_dict(", "settings_from_dict(", "known_keys(", "unknown = sorted(set(d)"):
            if pattern in text:
                offenders.append(f"{path.relative_to(REPO)}: {pattern}")
    assert not offenders, offenders


def test_every_verb_gets_its_settings_from_its_declaration():
    """`--settings` is never a verb's own argument: `Verb(settings=...)` declares it and `lem.core.stage` builds
    it; and no verb reports a builtin ValueError or RuntimeError as bad input (bugs keep their traceback)."""
    from lem.core.stage import resolve

    for name in cli.STAGES:
        for verb in cli.stage(name).verbs:
            own = {f for a in verb.args for f in a.flags}
            assert "--settings" not in own, f"lem {name} {verb.name}"
            if verb.settings is not None:
                assert hasattr(resolve(verb.settings), "from_dict"), f"lem {name} {verb.name}"
            for err in verb.errors:
                assert resolve(err) not in (ValueError, RuntimeError, TypeError), (
                    f"lem {name} {verb.name}: {err}"
                )
