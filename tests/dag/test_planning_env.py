"""Planning with Snakemake alone: in a fresh virtual environment holding only Snakemake (and numpy, the one
package planning adds, workflow/rules/common.smk), with no `lem` installed, the workflow imports its own
source tree: it plans the embedded default and the paper config, passes `--lint`, and a module from a git host,
deployed by docs/configuration.md's snakedeploy command as written, plans with no other install step, and
refuses another `lem` than its own package (one line naming both) but plans with that package installed. The environment is built once per session (pip, from its cache after scripts/setup.sh): the `dag` tier.
The package installed like a library, and the BLEU tokenizers planning checks:
tests/planning/test_planning_installed.py."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from support.dag import executed_rules, snakemake_cmd

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
REQUIREMENTS = PYPROJECT["dependencies"] + [
    r for extra in PYPROJECT["optional-dependencies"].values() for r in extra
]
PINS = dict(req.split("==", 1) for req in REQUIREMENTS if "==" in req)
NUMPY_LINE = f"pip install numpy=={PINS['numpy']} (pyproject.toml's pin)"


def snakemake_venv(tmp_path_factory, name: str, snakemake: str) -> Path:
    """The Python of a fresh venv with `pip install snakemake==<snakemake> numpy==<pin>` only."""
    venv = tmp_path_factory.mktemp(name) / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    proc = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--no-compile", "--disable-pip-version-check",
         f"snakemake=={snakemake}", f"numpy=={PINS['numpy']}"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return python


@pytest.fixture(scope="session")
def bare_python(tmp_path_factory) -> Path:
    """Snakemake at its pin and numpy, nothing else."""
    return snakemake_venv(tmp_path_factory, "bare-snakemake", PINS["snakemake"])


def bare(
    python: Path, workdir: Path, *args: str, extra_env: dict[str, str] | None = None, **kw
) -> subprocess.CompletedProcess:
    """The suite's Snakemake command line (tests/support/dag.py) run by the bare environment's Python (no
    PYTHONPATH, no LEM_USE_INSTALLED, unless `extra_env` sets them)."""
    cmd = snakemake_cmd(workdir, *args, **kw)
    cmd[: cmd.index("snakemake") + 1] = [str(python), "-m", "snakemake"]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "LEM_USE_INSTALLED")}
    return subprocess.run(cmd, capture_output=True, text=True, cwd=workdir, env={**env, **(extra_env or {})})


def test_the_bare_environment_holds_no_package_of_the_pipeline(bare_python):
    probe = "import importlib.util as u; print([m for m in ('lem', 'pandas', 'pyarrow', 'torch', 'sacrebleu', 'scipy') if u.find_spec(m)])"  # fmt: skip
    out = subprocess.run([str(bare_python), "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.fixture(scope="session")
def pinned_plans(bare_python, tmp_path_factory) -> dict[str, dict[str, int]]:
    """Shipped config -> the jobs (rule -> count) the bare pinned Snakemake plans for it, each planned once."""
    plans: dict[str, dict[str, int]] = {}
    for config in ("config.yaml", "paper.yaml"):
        proc = bare(bare_python, tmp_path_factory.mktemp("plan"), "-n", config=REPO / "config" / config)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
        plans[config] = executed_rules(proc)
    return plans


@pytest.mark.parametrize("config", ["config.yaml", "paper.yaml"])
def test_a_bare_snakemake_plans_the_shipped_configs(pinned_plans, config):
    assert pinned_plans[config].get("report") == 1, pinned_plans[config]


# The oldest Snakemake the workflow admits (workflow/Snakefile's min_version), planned like the pinned one
OLDEST = re.search(r'min_version\("(\d+)\.(\d+)"\)', (REPO / "workflow" / "Snakefile").read_text())
OLDEST = f"{OLDEST.group(1)}.{OLDEST.group(2)}.0"


@pytest.fixture(scope="session")
def oldest_python(tmp_path_factory) -> Path:
    """Snakemake at OLDEST and numpy, nothing else."""
    return snakemake_venv(tmp_path_factory, "oldest-snakemake", OLDEST)


def test_the_oldest_admitted_snakemake_plans_the_same_jobs_and_lints(pinned_plans, oldest_python, tmp_path):
    """min_version("9.0") is a promise: Snakemake 9.0.0 plans the embedded default and the paper config to the
    same jobs as the pinned one (the workflow reads only Snakemake's documented interface) and lints clean."""
    version = subprocess.run(
        [str(oldest_python), "-m", "snakemake", "--version"], capture_output=True, text=True
    )
    assert version.stdout.strip() == OLDEST, version.stdout + version.stderr
    for config, pinned in pinned_plans.items():
        workdir = tmp_path / config
        workdir.mkdir()
        proc = bare(oldest_python, workdir, "-n", config=REPO / "config" / config)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
        assert executed_rules(proc) == pinned, (config, executed_rules(proc), pinned)
    proc = bare(oldest_python, tmp_path, "--lint", config=REPO / "config" / "config.yaml")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_a_bare_snakemake_lints_the_workflow(bare_python, tmp_path):
    proc = bare(bare_python, tmp_path, "--lint", config=REPO / "config" / "config.yaml")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


# The repository's address in the test: git (snakedeploy's clone, and Snakemake's own clone of a module from a
# git host) reads it from a copy of the working tree, by git's `url.<base>.insteadOf`; nothing leaves the machine.
URL = "https://github.com/lem-pipeline/lem-pipeline"


def documented_deploy_command() -> list[str]:
    """docs/configuration.md's deploy command, as written, with the repository's address filled in."""
    text = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if line.startswith("snakedeploy deploy-workflow ")]
    assert len(lines) == 1, lines
    return shlex.split(lines[0].replace("<this repository's URL>", URL))


def repository_copy(dest: Path) -> Path:
    """A git repository (branch main, one commit) of the working tree's files: tracked and new, not ignored."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
        capture_output=True, check=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, listed):
        src = REPO / name
        if src.is_symlink() or src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name, follow_symlinks=False)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=dest, check=True)
    subprocess.run([*git, "add", "-A"], cwd=dest, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "copy"], cwd=dest, check=True)
    return dest


def test_the_documented_deploy_command_deploys_a_module_that_plans_with_no_install_step(
    bare_python, tmp_path, monkeypatch
):
    source = repository_copy(tmp_path / "repository")
    gitconfig = tmp_path / "gitconfig"
    gitconfig.write_text(f'[url "{source.as_uri()}"]\n\tinsteadOf = {URL}\n')
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv(
        "XDG_CACHE_HOME", str(tmp_path / "cache")
    )  # Snakemake's clone of the module's repository
    command = documented_deploy_command()
    command[0] = str(Path(sys.executable).with_name("snakedeploy"))
    proc = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    root = tmp_path / command[3]
    deployed = (root / "workflow" / "Snakefile").read_text()
    assert 'github("lem-pipeline/lem-pipeline", path="workflow/Snakefile", branch="main")' in deployed
    proc = bare(bare_python, root, "-n", config=None, snakefile=None)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "Job stats" in proc.stdout + proc.stderr
    # the package, read file by file through workflow.source_path as workflow/package-files.txt lists it
    (tree,) = (root / ".snakemake" / "lem-src").iterdir()
    listed = (REPO / "workflow" / "package-files.txt").read_text().splitlines()
    paths = sorted(line.split("  ")[1] for line in listed if line and not line.startswith("#"))
    marker = (tree / ".lem-src-complete").read_text().splitlines()
    assert marker == [tree.name, *paths]
    for (
        rel
    ) in paths:  # every file of the package with its bytes (the last newline, which Snakemake's git reader
        # drops, restored); README.md, for the build only, as read
        want = (REPO / rel).read_bytes()
        assert (tree / rel).read_bytes() == (want.removesuffix(b"\n") if rel == "README.md" else want), rel
    assert not (tree / "src/lem/config_check/config.schema.yaml").is_symlink()
    # another `lem` importable (this checkout's package with one function edited): planning stops in one line
    # naming both
    other = tmp_path / "other"
    shutil.copytree(REPO / "src" / "lem", other / "lem", ignore=shutil.ignore_patterns("__pycache__"))
    (other / "lem" / "curate.py").write_text((other / "lem" / "curate.py").read_text() + "\nEDITED = 1\n")
    proc = bare(bare_python, root, "-n", config=None, snakefile=None, extra_env={"PYTHONPATH": str(other)})
    out = proc.stdout + proc.stderr
    lines = [line for line in out.splitlines() if "importable `lem`" in line]
    assert proc.returncode != 0 and len(lines) == 1 and "Job stats" not in out, out[-3000:]
    assert f"found {other / 'lem'} (on PYTHONPATH)" in lines[0], lines[0]
    assert f"this workflow's is {tree / 'src' / 'lem'} (the module's package" in lines[0], lines[0]
    assert f"files sha256 {tree.name[:12]}" in lines[0], lines[0]
    # a package installed from the module's files is its own: used
    site = tmp_path / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--disable-pip-version-check", "--target", str(site), str(tree)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = bare(bare_python, root, "-n", "results/plan.txt", config=None, snakefile=None,
                extra_env={"PYTHONPATH": str(site)})  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "rule plan:" in out and "importable" not in out, out[-3000:]


def test_without_numpy_planning_stops_in_one_line_naming_it(bare_python, tmp_path):
    hide = "import runpy, sys; sys.modules['numpy'] = None; sys.argv[0] = 'snakemake'; runpy.run_module('snakemake', run_name='__main__', alter_sys=True)"  # fmt: skip
    cmd = snakemake_cmd(tmp_path, "-n", config=REPO / "config" / "config.yaml")
    cmd[: cmd.index("snakemake") + 1] = [str(bare_python), "-c", hide]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and NUMPY_LINE in out and "Traceback" not in out, out[-2000:]
    common = (REPO / "workflow" / "rules" / "common.smk").read_text()
    assert NUMPY_LINE in common  # the pin named is pyproject.toml's
