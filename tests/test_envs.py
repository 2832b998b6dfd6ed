"""The rules' environments (envs/*.yaml): pinned as pyproject.toml, each installing the workflow's own package,
named by every rule; and what Snakemake runs under `--software-deployment-method conda`, with a stand-in
`conda` on PATH that records what it is asked to do (conda itself cannot be installed on these machines, so
no environment is really solved here)."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from dag import new_workdir, small_config

REPO = Path(__file__).resolve().parents[1]
ENVS = sorted((REPO / "envs").glob("*.yaml"))
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
PACKAGE_LINE = "lem-pipeline @ ${LEM_PIPELINE_PACKAGE}"


def _name(req: str) -> str:
    return re.split(r"[\s<>=!~;\[@]", req, maxsplit=1)[0].lower().replace("_", "-")


PINS = {_name(req): req.split("==", 1)[1] for req in PYPROJECT["dependencies"] if "==" in req}


def pip_entries(env: Path) -> list[str]:
    deps = yaml.safe_load(env.read_text())["dependencies"]
    return [p for d in deps if isinstance(d, dict) for p in d.get("pip", [])]


def test_every_environment_pins_as_pyproject_and_installs_the_workflows_package():
    assert {p.stem for p in ENVS} >= {"core", "annotate", "train", "mining", "laser"}
    for env in ENVS:
        pips = pip_entries(env)
        deps = yaml.safe_load(env.read_text())["dependencies"]
        if env.stem == "laser":  # Python 3.8: its own pins; it runs the workflow's script, not the package
            assert "python=3.8" in deps and not any("lem-pipeline" in p for p in pips)
            continue
        assert "python=3.11" in deps, env.name  # requires-python >= 3.11
        assert pips[-1] == PACKAGE_LINE, env.name
        version = re.search(r"lem-pipeline (\S+) \(", env.read_text())
        assert version and version.group(1) == PYPROJECT["version"], f"{env.name}: version comment"
        for req in pips[:-1]:
            name, _, pin = req.partition("==")
            assert pin and PINS.get(_name(name), pin) == pin.split()[0], f"{env.name}: {req} vs pyproject"
            assert _name(name) in PINS or env.stem == "mining-gpu", f"{env.name}: {name} not in pyproject"


def test_the_package_source_is_the_workflows_own_folder():
    """package_source (common.smk): a file:// URL of the folder that holds workflow/, resolved from the
    rule files' folder, so a module used from elsewhere installs its own package, at its own version."""
    common = (REPO / "workflow" / "rules" / "common.smk").read_text()
    assert "shell.prefix" not in common and "PYTHONPATH" not in common
    for path in (REPO / "workflow" / "rules").glob("*.smk"):
        text = path.read_text()
        assert "export PATH" not in text and "PYTHONPATH" not in text, path.name


# --- the rules and their environments, as Snakemake loads the workflow ------------------------------------------


def rule_envs(workdir: Path, configfile: Path | None = None) -> dict[str, str | None]:
    """rule name -> its conda environment, for the rules that run a command."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings, StorageSettings

    with SnakemakeApi(OutputSettings()) as api:
        wf = api.workflow(
            resource_settings=ResourceSettings(cores=1),
            config_settings=ConfigSettings(configfiles=[configfile] if configfile else []),
            storage_settings=StorageSettings(),
            snakefile=REPO / "Snakefile",
            workdir=workdir,
        )
        return {r.name: r.conda_env for r in wf._workflow.rules if r.shellcmd or r.script}


def test_every_rule_names_an_environment_that_exists(tmp_path):
    envs = rule_envs(tmp_path, REPO / "config" / "paper.yaml")
    assert len(envs) > 40 and "generate_corpus" not in envs  # the paper config reads real data
    rules_dir = REPO / "workflow" / "rules"
    for rule, env in envs.items():
        assert env, f"rule {rule} names no environment"
        assert (rules_dir / env).resolve().is_file(), f"rule {rule}: {env}"
    laser = {env for rule, env in envs.items() if rule.startswith("embed_reference_laser")}
    assert laser == {"../../envs/laser.yaml"}


# --- under --sdm conda, with a stand-in conda -------------------------------------------------------------------

FAKE_CONDA = r"""#!@PYTHON@
# A stand-in `conda`: answers Snakemake's checks, records every call, and "creates" an environment as a
# folder whose bin/ has `lem` and `python` shims (logging their calls, then running the test's interpreter).
import json, os, sys
from pathlib import Path

import yaml

SHIM = '#!/bin/bash\nprintf \'{"ran": "%s"}\\n\' "$0" >> "$LEM_FAKE_CONDA_LOG"\nexec TARGET "$@"\n'
log = Path(os.environ["LEM_FAKE_CONDA_LOG"])
args = sys.argv[1:]
with log.open("a") as f:
    f.write(json.dumps({"conda": args}) + "\n")
if args == ["--version"]:
    print("conda 24.11.3")
elif args[:2] == ["info", "--json"]:
    print(json.dumps({"conda_prefix": "@BASE@", "platform": "linux-64"}))
elif args[:2] == ["config", "--get"]:
    print(json.dumps({"get": {"channel_priority": "strict"}}))
elif args[:2] == ["env", "create"]:
    spec = Path(args[args.index("--file") + 1].strip('"'))
    prefix = Path(args[args.index("--prefix") + 1].strip('"'))
    deps = yaml.safe_load(spec.read_text())["dependencies"]
    pips = [p for d in deps if isinstance(d, dict) for p in d.get("pip", [])]
    with log.open("a") as f:  # pip expands ${VAR} in the requirements file conda writes for it
        f.write(json.dumps({"created": str(prefix), "pip": [os.path.expandvars(p) for p in pips]}) + "\n")
    (prefix / "bin").mkdir(parents=True)
    for name, target in (("lem", "@LEM@"), ("python", "@PYTHON@")):
        shim = prefix / "bin" / name
        shim.write_text(SHIM.replace("TARGET", target))
        shim.chmod(0o755)
"""

ACTIVATE = r"""# a stand-in conda's activate: records the command line Snakemake composed, then puts the env first on PATH
printf '%s\n' "{\"composed\": $(printf '%s' "$BASH_EXECUTION_STRING" | "$LEM_FAKE_PYTHON" -c 'import json,sys; print(json.dumps(sys.stdin.read()))')}" >> "$LEM_FAKE_CONDA_LOG"
export PATH="$1/bin:$PATH"
"""


@pytest.fixture
def fake_conda(tmp_path) -> tuple[dict, Path]:
    """(environment for Snakemake with the stand-in first on PATH, its log)."""
    base = tmp_path / "fake-conda"
    (base / "bin").mkdir(parents=True)
    lem = Path(sys.executable).parent / "lem"
    conda = base / "bin" / "conda"
    conda.write_text(
        FAKE_CONDA.replace("@PYTHON@", sys.executable).replace("@BASE@", str(base)).replace("@LEM@", str(lem))
    )
    conda.chmod(conda.stat().st_mode | stat.S_IXUSR)
    (base / "bin" / "activate").write_text(ACTIVATE)
    log = tmp_path / "conda.log"
    env = {
        **os.environ,
        "PATH": f"{base / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "LEM_FAKE_CONDA_LOG": str(log),
        "LEM_FAKE_PYTHON": sys.executable,
    }
    return env, log


def records(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_under_sdm_conda_each_job_runs_the_lem_of_its_environment(tmp_path, fake_conda):
    """A small target run to the end with `--sdm conda`: the environment is created from envs/core.yaml with
    the package from the workflow's own folder, and the job's command line is the conda activation, then
    Snakemake's `set -euo pipefail`, then the rule's `lem` call, which runs the environment's `lem`."""
    env, log = fake_conda
    cfg = small_config()
    cfg["corpus"]["generate"].update(mono_sentences=40, para_train=20, para_valid=5, news_documents=2,
                                     sentiment_examples=20, noisy_pairs=8, noisy_extra_pairs={})  # fmt: skip
    work = new_workdir(tmp_path / "run", cfg)
    cmd = [sys.executable, "-m", "snakemake", "results/corpus/mono/en.txt", "--snakefile", str(REPO / "Snakefile"),
           "--directory", str(work), "--configfile", str(work / "config.yaml"), "--cores", "1", "--sdm", "conda"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=work)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:] + "\n" + str(records(log))
    assert (work / "results" / "corpus" / "mono" / "en.txt").stat().st_size > 0
    got = records(log)
    created = [r for r in got if "created" in r]
    assert len(created) == 1 and created[0]["pip"][-1] == f"lem-pipeline @ {REPO.as_uri()}"
    assert created[0]["pip"][:-1] == pip_entries(REPO / "envs" / "core.yaml")[:-1]
    env_dir = created[0]["created"]
    composed = [r["composed"] for r in got if "composed" in r]
    assert len(composed) == 1
    line = composed[0]
    assert line.startswith(
        f"source {tmp_path / 'fake-conda' / 'bin' / 'activate'} '{env_dir}'; set -euo pipefail;"
    )
    assert " lem corpus generate " in line and "export PATH" not in line and "PYTHONPATH" not in line
    assert {"ran": f"{env_dir}/bin/lem"} in got  # the environment's lem, not the venv's
