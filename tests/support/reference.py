"""The reference-encoder tests' shared pieces (tests/unit/test_refenc.py, tests/planning/test_refenc_plan.py,
tests/dag/test_refenc_run.py): a pinned revision, the LASER script, and the reference rows a dry run plans."""

from __future__ import annotations

import re
import subprocess

from support import REPO

COMMIT = "0123456789abcdef0123456789abcdef01234567"
LASER_SCRIPT = REPO / "workflow" / "scripts" / "laser_encode.py"


def planned_jobs(proc: subprocess.CompletedProcess) -> dict[str, set[str]]:
    """rule -> the `variant` wildcards of its planned jobs, from a dry run's output."""
    assert proc.returncode == 0, proc.stdout + proc.stderr
    jobs: dict[str, set[str]] = {}
    for block in (proc.stdout + proc.stderr).split("\nrule ")[1:]:
        m = re.search(r"wildcards: .*?variant=([\w.-]+)", block)
        jobs.setdefault(block.split(":", 1)[0], set()).add(m.group(1) if m else "")
    return jobs


def reference_rows(named: dict, laser: bool) -> set:
    """The union of `named`'s values over the reference rules (`embed_reference[_laser][_<part>]`) of one kind."""
    return set().union(
        *(v for rule, v in named.items() if rule.startswith("embed_reference") and ("laser" in rule) == laser)
    )
