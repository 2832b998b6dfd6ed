"""Real data: downloads, MADLAD-400 extraction, dataset loaders and the leakage guard.

Every loader counts the defects it repairs or drops and logs them in one summary line, so a change in
the numbers of a paper run can be traced to the data rather than guessed at.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T")


def settings_from_dict(cls: type[T], data: dict[str, Any] | None, where: str = "settings") -> T:
    """Build dataclass `cls` from `data`, rejecting unknown keys (a typo must fail, not be ignored)."""
    data = dict(data or {})
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(data) - names)
    if unknown:
        raise ValueError(
            f"{where}: unknown key(s) {unknown} for {cls.__name__}; expected some of {sorted(names)}"
        )
    return cls(**data)
