"""Typed settings from config dictionaries: every stage's dataclass is built here, so a typo in a config
key fails with the same clear message everywhere instead of being silently ignored."""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T")


def known_keys(cls: type, data: dict[str, Any] | None, where: str) -> dict[str, Any]:
    """A copy of `data`, after checking that every key is a field of dataclass `cls`."""
    data = dict(data or {})
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ValueError(
            f"{where}: unknown key(s) {unknown} for {cls.__name__}; expected some of {sorted(names)}"
        )
    return data


def settings_from_dict(cls: type[T], data: dict[str, Any] | None, where: str = "settings") -> T:
    """Build dataclass `cls` from `data`, rejecting unknown keys."""
    return cls(**known_keys(cls, data, where))
