"""The workflow's `plan` rule (`lem plan cost` as a job) runs alone, for the paper config, and writes the plan's
three files. The plan itself: tests/planning/test_plan.py."""

from __future__ import annotations

import json
from pathlib import Path

from support.dag import snakemake

REPO = Path(__file__).resolve().parents[2]
PAPER = REPO / "config" / "paper.yaml"


def test_plan_rule_runs_alone(tmp_path):
    proc = snakemake(tmp_path, "results/plan.txt", "--cores", "1", config=PAPER)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "total (48 jobs)" in (tmp_path / "results/plan.txt").read_text()
    assert len(json.loads((tmp_path / "results/plan.json").read_text())["jobs"]) == 48
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == ["plan.json", "plan.tsv", "plan.txt"]
