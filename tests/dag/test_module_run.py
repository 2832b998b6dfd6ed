"""The workflow deployed as a `module` (the layout snakedeploy writes, support.builders.deployed_module) runs a
small target to the end in its rule's environment, under `--sdm conda` with a stand-in conda
(tests/support/dag.py). Planned and checked without running: tests/planning/test_module.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from support.builders import deployed_module
from support.dag import conda_records, snakemake, stand_in_conda

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def deployed(tmp_path) -> Path:
    return deployed_module(tmp_path)


def test_a_module_runs_a_small_target_in_its_rules_environment(deployed, tmp_path):
    """`--sdm conda` in the deploying folder: the rule's environment (the module's envs/core.yaml) installs the
    package from the module's folder, never the deploying one; the job's command line is the activation, then
    Snakemake's `set -euo pipefail`, then the rule's `lem` call, which runs that environment's `lem`."""
    env, log = stand_in_conda(tmp_path)
    target = "results/corpus/mono/en.txt"
    # no --snakefile: Snakemake finds the deployed workflow's Snakefile in the deploying folder
    proc = snakemake(deployed, target, "--cores", "1", "--sdm", "conda", config=None, snakefile=None, env=env)
    got = conda_records(log)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:] + f"\n{got}"
    assert (deployed / target).stat().st_size > 0
    created = [r for r in got if "created" in r]
    core = yaml.safe_load((REPO / "envs" / "core.yaml").read_text())["dependencies"][-1]["pip"]
    assert len(created) == 1 and created[0]["pip"][:-1] == core[:-1]
    assert created[0]["pip"][-1] == f"lem-pipeline @ {REPO.as_uri()}"
    env_dir = created[0]["created"]
    assert env_dir.startswith(str(deployed / ".snakemake" / "conda"))
    composed = [r["composed"] for r in got if "composed" in r]
    activate = tmp_path / "fake-conda" / "bin" / "activate"
    assert len(composed) == 1 and composed[0].startswith(f"source {activate} '{env_dir}'; set -euo pipefail;")
    assert " lem corpus generate " in composed[0] and "PATH" not in composed[0]
    assert {"ran": f"{env_dir}/bin/lem"} in got  # the environment's lem, not the one on Snakemake's PATH
