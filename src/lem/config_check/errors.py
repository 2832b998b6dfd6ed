"""The refusal every config check raises, and the short forms its one-line messages use."""

from __future__ import annotations

from typing import Any


class ConfigError(ValueError):
    """A config value that the dataclass of its section refuses; the message names the key."""


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


def _short(value: Any, n: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= n else f"{text[:n]}... ({type(value).__name__})"
