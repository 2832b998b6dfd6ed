"""Planning without the training stack: the package installed like a library (not editable, from a tree laid
out as a clone), whose plan tools read the config schema it ships (package data) wherever it is installed, and
which the workflow refuses to plan with unless LEM_USE_INSTALLED=1 (it is not the workflow's own src/); and
the BLEU tokenizers that planning checks without importing sacrebleu. Planning in a fresh environment holding
Snakemake alone (the `dag` tier): tests/dag/test_planning_env.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.dag import snakemake

from lem import __version__ as VERSION

REPO = Path(__file__).resolve().parents[2]


def test_the_bleu_tokenizers_planning_checks_are_sacrebleus():
    from sacrebleu.metrics import BLEU

    from lem.nmt.settings import BLEU_TOKENIZERS

    assert sorted(BLEU_TOKENIZERS) == sorted(BLEU.TOKENIZERS)


@pytest.fixture(scope="session")
def installed(tmp_path_factory) -> Path:
    """`pip install --no-deps` (not editable) of a copy of the repository's package files, laid out as in a
    clone (the schema's link in the package resolves to workflow/schemas/), into a folder of its own; the
    dependencies are the suite's environment's."""
    root = tmp_path_factory.mktemp("installed")
    tree, site = root / "tree", root / "site"
    tree.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, tree / name)
    shutil.copytree(REPO / "src", tree / "src", symlinks=True, ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))  # fmt: skip
    shutil.copytree(REPO / "workflow" / "schemas", tree / "workflow" / "schemas")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--disable-pip-version-check", "--target", str(site), str(tree)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return site


def lem(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run(
        [sys.executable, "-m", "lem", *args], capture_output=True, text=True, cwd=cwd, env=env
    )


def test_the_installed_package_ships_the_workflows_schema(installed, tmp_path):
    probe = "from lem.config_check.schema import SCHEMA; print(SCHEMA)"
    out = lem(installed, tmp_path, "--help")  # the package imports from the install, not the checkout
    assert out.returncode == 0, out.stderr
    env = {**os.environ, "PYTHONPATH": str(installed)}
    path = Path(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env,
                               cwd=tmp_path, check=True).stdout.strip())  # fmt: skip
    assert path.is_relative_to(installed) and path.is_file() and not path.is_symlink()
    assert path.read_bytes() == (REPO / "workflow" / "schemas" / "config.schema.yaml").read_bytes()


def test_plan_cost_and_power_run_from_an_installed_package(installed, tmp_path):
    cost = lem(installed, tmp_path, "plan", "cost", "--configfile", str(REPO / "config" / "config.yaml"))
    assert cost.returncode == 0 and "GPU-hours" in cost.stdout, cost.stderr[-2000:]
    power = lem(installed, tmp_path, "plan", "power", "--configfile", str(REPO / "config" / "config.yaml"))
    assert power.returncode == 1 and "no metrics files under results" in power.stderr, power.stderr[-2000:]
    bad = tmp_path / "bad.yaml"
    bad.write_text("pretrain: {seeds: seven}\n")
    power = lem(
        installed, tmp_path, "plan", "power", "--configfile", str(REPO / "config" / "config.yaml"), str(bad)
    )
    out = power.stderr
    assert power.returncode == 1 and "pretrain.seeds" in out and "Traceback" not in out, out[-2000:]
    assert len(out.strip().splitlines()) == 1


def test_planning_stops_in_one_line_when_the_importable_lem_is_not_the_workflows_own(installed, tmp_path):
    """Another copy of the package importable before this checkout's (installed elsewhere, first on
    PYTHONPATH): `snakemake -n` here stops at once, one line naming the `lem` found and the workflow's own;
    with LEM_USE_INSTALLED=1 it plans with the one found, and says so."""
    env = {**os.environ, "PYTHONPATH": str(installed)}
    env.pop("LEM_USE_INSTALLED", None)
    proc = snakemake(tmp_path / "refused", "-n", config=REPO / "config" / "config.yaml", env=env)
    out = proc.stdout + proc.stderr
    lines = [line for line in out.splitlines() if "importable `lem`" in line]
    assert proc.returncode != 0 and len(lines) == 1 and "Job stats" not in out, out[-3000:]
    found = installed.resolve() / "lem"
    assert f"found {found} (on PYTHONPATH) (lem-pipeline {VERSION}, no commit known)" in lines[0]
    assert f"this workflow's is {REPO / 'src' / 'lem'} (lem-pipeline {VERSION} at " in lines[0]
    assert "LEM_USE_INSTALLED=1" in lines[0]
    proc = snakemake(tmp_path / "opted-in", "-n", config=REPO / "config" / "config.yaml",
                     env={**env, "LEM_USE_INSTALLED": "1"})  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Job stats" in out, out[-3000:]
    assert f"warning: LEM_USE_INSTALLED=1: planning and the jobs use the `lem` package at {found} " in out
