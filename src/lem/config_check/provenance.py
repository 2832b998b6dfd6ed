"""Where each value of a checked section comes from: every section the rules pass to a `lem` verb, with the
same merges as the rules, read from the account each rule's settings function carries (lem.run.settings.SETTINGS;
tests/planning/test_config_sections.py checks that the two agree on every shipped config)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from lem.run.settings import Use, provenance


def _uses(config: dict[str, Any]) -> Iterator[Use]:
    """Every section the rules pass to a `lem` verb (lem.run.settings.provenance)."""
    return provenance(config)


__all__ = ["Use", "_uses"]
