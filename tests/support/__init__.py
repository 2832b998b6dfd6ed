"""The suite's shared helpers, in one place (tests/conftest.py puts tests/ on the path: `from support.dag import
snakemake`): `dag` (the suite's one way to run Snakemake, the shrunken DAG, the session's long runs, which
`waiter.py` runs), `builders` (the data a fixture
builds, one function each, whichever test files read it), `import_graph` (the imports between lem modules) and
the helpers that test files of several tiers share (`training`, `static_step`, `renaming`, `reference`,
`run_model`)."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# Real public data lives in ../shared/data beside the repository (never copied in).
SHARED_DATA = Path(os.environ.get("LEM_SHARED_DATA", REPO.parent / "shared" / "data"))
