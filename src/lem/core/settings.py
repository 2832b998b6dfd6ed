"""Typed settings from config dictionaries: one base, `Settings`, that every stage's settings dataclass
extends, so every config section (and every verb's `--settings`) is read one way:

- an unknown key is refused, naming it and the known ones: a typo never falls back to a default;
- every value is checked against its field's annotation (ints count as floats, bools as neither);
  a list for a tuple field becomes a tuple, and a mapping for a field typed by a settings dataclass is
  built by that class's own `from_dict` (nested settings);
- `prepare` (a class's own, optional) turns the raw mapping's shorthands into their full form before
  the checks (one string for a list of one); `validate` (the class's own) checks values and their
  combinations on the built object.

A refused value raises `SettingsError` (a ValueError) whose message names the section, the key, what was
expected and what was given. This module also runs under Python 3.8 (`lem.reference` in envs/laser.yaml):
there an annotation that Python cannot evaluate (`str | None`) is left to the class's `validate`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import sys
import types
import typing
from collections.abc import Iterator, Mapping
from typing import Any, TypeVar

S = TypeVar("S", bound="Settings")


class SettingsError(ValueError):
    """A settings value (a config section, a verb's `--settings`) refused: the message names the key."""


class Settings:
    """The base of every settings dataclass: `@dataclass class XSettings(Settings)` with typed fields.

    `SECTION` names the settings in messages ("mining settings"); `KEY_ORDER`, where set, is the key order
    of `to_dict` (the order of the files a class wrote before it moved under a shared base)."""

    SECTION = "settings"
    KEY_ORDER = ()  # type: tuple[str, ...]

    @classmethod
    def from_dict(cls: type[S], data: Mapping[str, Any] | None = None, where: str | None = None) -> S:
        """Build from a config mapping (None: every default): unknown keys, types, then `validate`.
        `where` names the mapping in messages (default `SECTION`)."""
        where = where or cls.SECTION
        if data is not None and not isinstance(data, Mapping):
            raise SettingsError(f"{where}: expected a mapping, got {data!r}")
        with _named(cls, where):
            values = cls.prepare(known_keys(cls, data, where))
        hints = field_hints(cls)
        for key, value in values.items():
            values[key] = typed(value, hints.get(key), where, key)
        settings = cls(**values)
        with _named(cls, where):
            settings.validate()
        return settings

    @classmethod
    def prepare(cls, data: dict[str, Any]) -> dict[str, Any]:
        """The raw mapping (known keys only) with its shorthands expanded; may refuse a combination of
        keys that only the mapping shows (which keys were given). Default: unchanged."""
        return data

    def validate(self) -> None:
        """Check values and their combinations; raise `SettingsError` naming the key. Default: none."""

    def refused(self, key: str, expected: str) -> SettingsError:
        """The error of field `key`'s value: '<section>: key=value: expected <expected>'."""
        return SettingsError(f"{self.SECTION}: {key}={getattr(self, key)!r}: expected {expected}")

    def to_dict(self) -> dict[str, Any]:
        """The fields as plain JSON values (tuples as lists; nested settings as mappings)."""
        d = _plain(dataclasses.asdict(self))  # type: ignore[call-overload]
        order = self.KEY_ORDER or tuple(d)
        return {k: d[k] for k in order}


@dataclasses.dataclass(frozen=True)
class SettingsByName:
    """Settings given per name (per language, per variant): `from_dict` builds a mapping of name -> mapping
    into name -> `cls`, each value by `cls.from_dict`, its messages naming the entry."""

    cls: type

    def from_dict(self, data: Mapping[str, Any] | None = None, where: str | None = None) -> dict[str, Any]:
        where = where or self.cls.SECTION
        if data is not None and not isinstance(data, Mapping):
            raise SettingsError(f"{where}: expected a mapping of name -> settings, got {data!r}")
        return {name: self.cls.from_dict(spec, f"{where}: {name}") for name, spec in (data or {}).items()}


@contextlib.contextmanager
def _named(cls: type, where: str) -> Iterator[None]:
    """A `prepare` / `validate` error of settings nested at `where` (not at the top: `cls.SECTION`) names
    `where` instead of the section."""
    try:
        yield
    except SettingsError as err:
        section = f"{cls.SECTION}: "  # type: ignore[attr-defined]
        if where == cls.SECTION or str(err).startswith(f"{where}: "):  # type: ignore[attr-defined]
            raise
        message = str(err)
        raise SettingsError(
            f"{where}: {message[len(section) :] if message.startswith(section) else message}"
        ) from None


def known_keys(cls: type, data: Mapping[str, Any] | None, where: str) -> dict[str, Any]:
    """A copy of `data`, after checking that every key is a field of dataclass `cls`."""
    data = dict(data or {})
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names, key=str)
    if unknown:
        raise SettingsError(
            f"{where}: unknown key(s) {unknown} for {cls.__name__}; expected some of {sorted(names)}"
        )
    return data


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


# --- types from the annotations -----------------------------------------------------------------------------


_HINTS: dict[type, dict[str, Any]] = {}


def field_hints(cls: type) -> dict[str, Any]:
    """Field name -> its evaluated annotation; a field whose annotation cannot be evaluated here (Python
    3.8 and `str | None`) is left out (not type-checked)."""
    if cls not in _HINTS:
        _HINTS[cls] = _evaluated_hints(cls)
    return _HINTS[cls]


def _evaluated_hints(cls: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls)
    except (NameError, TypeError):
        pass
    out: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        module = vars(sys.modules[klass.__module__])
        for name, hint in getattr(klass, "__annotations__", {}).items():
            try:
                out[name] = eval(hint, module) if isinstance(hint, str) else hint  # noqa: S307
            except (NameError, TypeError, SyntaxError):
                out.pop(name, None)
    return out


def _union_args(hint: Any) -> tuple[Any, ...] | None:
    union_type = getattr(types, "UnionType", None)  # X | Y (Python 3.10+)
    origin = typing.get_origin(hint) if hasattr(typing, "get_origin") else None
    if origin is typing.Union or (union_type is not None and origin is union_type):
        return typing.get_args(hint)
    return None


def _settings_class(hint: Any) -> type | None:
    """The settings dataclass of a field typed by one (or by one or None)."""
    args = _union_args(hint)
    for h in args if args is not None else (hint,):
        if isinstance(h, type) and issubclass(h, Settings) and dataclasses.is_dataclass(h):
            return h
    return None


def type_ok(value: Any, hint: Any, mapping_ok: bool = False) -> bool:
    """Whether `value` fits annotation `hint` (ints count as floats, bools as neither; an annotation this
    does not know passes: the class's `validate` decides). `mapping_ok`: `value` is a raw config value,
    before building, so a dataclass-typed field (nested settings) also takes a mapping."""
    if hint is Any or isinstance(hint, TypeVar):
        return True
    args = _union_args(hint)
    if args is not None:
        return any(type_ok(value, a, mapping_ok) for a in args)
    if hint is None or hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if dataclasses.is_dataclass(hint):
        return isinstance(value, hint) or (mapping_ok and isinstance(value, Mapping))
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (list, tuple) or hint in (list, tuple):
        if not isinstance(value, (list, tuple)):
            return False
        if origin is tuple and args and args[-1] is not Ellipsis:
            return len(value) == len(args) and all(
                type_ok(v, a, mapping_ok)
                for v, a in zip(value, args)  # noqa: B905 - 3.8
            )
        return all(type_ok(v, args[0], mapping_ok) for v in value) if args else True
    if origin is dict or hint is dict:
        if not isinstance(value, dict):
            return False
        k, v = args or (Any, Any)
        return all(type_ok(a, k, mapping_ok) and type_ok(b, v, mapping_ok) for a, b in value.items())
    return True


def describe(hint: Any) -> str:
    """`hint` in words: 'an integer', 'a number or null', 'a list of strings', ..."""
    args = _union_args(hint)
    if args is not None:
        return " or ".join(describe(a) for a in args)
    if hint is type(None) or hint is None:
        return "null"
    plain = {bool: "true or false", int: "an integer", float: "a number", str: "a string", Any: "any value"}
    if hint in plain:
        return plain[hint]
    if dataclasses.is_dataclass(hint):
        return "a mapping"
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (list, tuple) or hint in (list, tuple):
        if not args:
            return "a list"
        item = describe(args[0])
        for article in ("an ", "a "):
            if item.startswith(article):
                item = item[len(article) :]
        return f"a list of {item}s" if args[0] in (int, float, str) else f"a list of {item}"
    if origin is dict or hint is dict:
        if not args or args[1] is Any:
            return "a mapping"
        return f"a mapping of {_plural(args[0])} to {_plural(args[1])}"
    return str(hint)


def _plural(hint: Any) -> str:
    """`describe(hint)` without its article, as a plural ('integers', 'strings')."""
    text = describe(hint)
    for article in ("an ", "a "):
        if text.startswith(article):
            text = text[len(article) :]
    return f"{text}s" if hint in (int, float, str) else text


def misfit(value: Any, hint: Any) -> tuple[str, Any, str] | None:
    """Where `value` does not fit annotation `hint`: (the entry's key suffix, e.g. `.si-en`, or '' for the
    value itself; the value there; what was expected there), the first entry of a mapping or list that does
    not fit rather than the whole; None when it fits."""
    if type_ok(value, hint, mapping_ok=True):
        return None
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if (origin is dict or hint is dict) and isinstance(value, dict) and args:
        for k, v in value.items():
            if not type_ok(k, args[0], mapping_ok=True):
                return f" key {k!r}", k, f"keys that are {_plural(args[0])}"
            if not type_ok(v, args[1], mapping_ok=True):
                return f".{k}", v, describe(args[1])
    if origin in (list, tuple) and isinstance(value, (list, tuple)) and args and args[-1] is Ellipsis:
        args = args[:1]
    if origin is list and isinstance(value, (list, tuple)) and args:
        for i, v in enumerate(value):
            if not type_ok(v, args[0], mapping_ok=True):
                return f"[{i}]", v, describe(args[0])
    return "", value, describe(hint)


def typed(value: Any, hint: Any, where: str, key: str) -> Any:
    """`value` of field `key` annotated `hint`: a nested settings mapping built, a list for a tuple made a
    tuple, a mapping for a dict made a dict; SettingsError naming `where` and `key` when it does not fit."""
    if hint is None:  # an annotation not evaluated here: the class's validate decides
        return value
    sub = _settings_class(hint)
    if sub is not None and isinstance(value, Mapping):
        return sub.from_dict(value, f"{where}: {key}")  # type: ignore[attr-defined]
    origin = typing.get_origin(hint)
    if (origin is tuple or hint is tuple) and isinstance(value, list):
        value = tuple(value)
    elif (origin is dict or hint is dict) and isinstance(value, Mapping) and not isinstance(value, dict):
        value = dict(value)
    if not type_ok(value, hint):
        suffix, got, expected = misfit(value, hint) or ("", value, describe(hint))
        raise SettingsError(f"{where}: {key}{suffix}={got!r}: expected {expected}")
    bad = non_finite(value)
    if bad is not None:  # NaN passes every `<=` check after it, inf every `>=`: refused once, here
        raise SettingsError(f"{where}: {key}{bad[0]}={bad[1]!r}: expected a finite number")
    return value


def non_finite(value: Any, at: str = "") -> tuple[str, float] | None:
    """The first NaN or infinite float in `value` (in its lists, tuples and mappings) and where: no setting
    takes one."""
    if isinstance(value, float) and not math.isfinite(value):
        return at, value
    items = (
        value.items()
        if isinstance(value, Mapping)
        else enumerate(value)
        if isinstance(value, (list, tuple))
        else ()
    )
    for k, v in items:
        found = non_finite(v, f"{at}.{k}" if isinstance(value, Mapping) else f"{at}[{k}]")
        if found is not None:
            return found
    return None


# --- command-line arguments ---------------------------------------------------------------------------------

SEED_MAX = 2**32 - 1  # numpy's and torch's seeds


def _in(low: float, high: float, low_open: bool, high_open: bool) -> Any:
    def ok(x: float) -> bool:
        return (low < x if low_open else low <= x) and (x < high if high_open else x <= high)

    return ok


# argument (its dest) -> (a test of its value, what it must be); an argument not listed and not a float
# passes (argparse types it). The same words as the config's checks (lem.config_check).
ARG_RANGES: dict[str, tuple[Any, str]] = {
    "alpha": (_in(0, 1, True, True), "a level in (0, 1)"),
    "positive_alpha": (_in(0, 1, True, True), "a level in (0, 1)"),
    "negative_alpha": (_in(0, 1, True, True), "a level in (0, 1)"),
    "valid_fraction": (_in(0, 1, False, True), "a share in [0, 1)"),
    "share": (_in(0, 1, True, False), "a share in (0, 1]"),
    "seed": (_in(0, SEED_MAX, False, False), f"an integer seed in 0..{SEED_MAX}"),
    "c1": (_in(0, float("inf"), False, True), "a finite number >= 0"),
    "c2": (_in(0, float("inf"), False, True), "a finite number >= 0"),
    "valid_size": (_in(0, float("inf"), False, True), "an integer count >= 0"),
    "column": (_in(0, float("inf"), False, True), "a column index >= 0"),
    **{
        name: (_in(1, float("inf"), False, True), "an integer >= 1")
        for name in (
            "vocab_size",
            "n_examples",
            "batch_size",
            "max_length",
            "dim",
            "max_pairs",
            "max_iterations",
            "threads",
        )
    },
}
# verbs whose arguments their own module checks (`lem plan power`: lem.evidence.power)
OWN_ARGUMENT_CHECKS = ("lem plan power",)


def argument_problem(prog: str, args: Any) -> str | None:
    """The first parsed argument of command `prog` ("lem report build") that is out of its range, as
    '--flag value: expected ...' (a float that is not finite, a level outside (0, 1), a negative seed or
    count, ...); None when every one fits. `args` is argparse's namespace."""

    if prog in OWN_ARGUMENT_CHECKS:
        return None
    for dest, given in sorted(vars(args).items()):
        flag = "--" + dest.replace("_", "-")
        for value in given if isinstance(given, list) else [given]:  # nargs="+": each value (`--seed 1 2`)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            if isinstance(value, float) and not math.isfinite(value):
                return f"{flag} {value}: expected a finite number"
            rule = ARG_RANGES.get(dest)
            if rule is not None and not rule[0](value):
                return f"{flag} {value}: expected {rule[1]}"
    return None
