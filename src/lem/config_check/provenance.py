"""Where each value of a checked section comes from: every section the rules pass to a `lem` verb, with the
same merges as the rules, read from the rules' own table (lem.run.settings.SETTINGS, which
lem.run.Run.settings_for reads too), so the check and the rules cannot drift apart."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from lem.run.settings import Use, provenance


def _uses(config: dict[str, Any]) -> Iterator[Use]:
    """Every section the rules pass to a `lem` verb (lem.run.settings.provenance)."""
    return provenance(config)


__all__ = ["Use", "_uses"]
