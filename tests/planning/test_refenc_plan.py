"""Reference encoders in the paper DAG: the rows ref_<name> planned with their environments (the paper config
planned once per session, `paper_plan`). The encoders themselves: tests/unit/test_refenc.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml
from support.reference import LASER_SCRIPT, planned_jobs, reference_rows

from lem import reference as refenc

REPO = Path(__file__).resolve().parents[2]


def test_the_paper_config_plans_the_reference_rows_in_their_environments(paper_plan):
    # the paper config as shipped, planned once for the session (tests/conftest.py)
    jobs = planned_jobs(subprocess.CompletedProcess([], 0, paper_plan, ""))
    assert reference_rows(jobs, laser=True) == {"ref_laser"} and reference_rows(jobs, laser=False) == {
        "ref_labse"
    }
    assert {"ref_laser", "ref_labse"} <= jobs["mine"]
    plan = paper_plan
    assert "results/mining/ref_laser/seed13/news_itn/si-ta.metrics.json" in plan
    assert "results/embeddings/ref_labse/seed13/news_itn/si-en/si.npy" in plan
    laser_jobs = [
        line.removeprefix("Shell command: ") for line in plan.splitlines() if "laser_encode.py" in line
    ]
    assert laser_jobs and all(
        line.startswith(f"python {LASER_SCRIPT} --sentences ") and "PYTHONPATH" not in line
        for line in laser_jobs
    )  # the workflow's own script, by the path of the workflow's folder
    # the rules' environments: tests/planning/test_envs.py (laser.yaml for the laser rows, train.yaml for the
    # others)
    laser_env = yaml.safe_load((REPO / "envs" / "laser.yaml").read_text())
    assert "python=3.8" in laser_env["dependencies"]
    assert f"laser-encoders=={refenc.LASER_ENCODERS_VERSION}" in laser_env["dependencies"][-1]["pip"]
