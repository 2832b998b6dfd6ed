"""Two runs of the shrunken DAG from scratch, in two folders, write byte-identical metrics and reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dag import digests, run_dag

pytestmark = pytest.mark.slow


def test_two_runs_from_scratch_write_identical_metrics_and_report(dag_reference: Path, tmp_path: Path):
    first = digests(dag_reference)
    metrics = [p for p in first if p.endswith(".json") and not p.startswith("results/report/")]
    tasks = {json.loads((dag_reference / p).read_text())["keys"]["task"] for p in metrics}
    assert {
        "mining",
        "sentiment",
        "curation",
        "annotation",
        "nmt",
    } <= tasks  # every metrics writer is compared
    assert "results/report/summary.tsv" in first and "results/report/summary.md" in first
    # the second run in a folder whose name has a space and a `;`: every path reaches the shell quoted
    second = digests(run_dag(tmp_path / "run again; x"))
    assert set(second) == set(first)
    differ = sorted(p for p in first if first[p] != second[p])
    assert not differ, f"{len(differ)} of {len(first)} files differ between two runs: {differ[:10]}"
    some = json.loads((dag_reference / metrics[0]).read_text())
    prov = some["provenance"]  # what the runs were made with, recorded in every metrics file
    assert prov["command"].startswith("lem ") and len(prov["settings_sha256"]) == 64
    assert prov["versions"]["torch"] and prov["versions"]["python"]
