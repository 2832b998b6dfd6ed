"""Shared fixtures. Real public data lives in ../shared/data beside the repository (never copied in)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("LEM_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The folder of real public datasets; tests that need it skip, saying why, when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data folder {SHARED_DATA} is absent (set LEM_SHARED_DATA to point at it)")
    return SHARED_DATA
