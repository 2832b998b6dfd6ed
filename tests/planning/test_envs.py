"""The rules' environments (envs/*.yaml): pinned as pyproject.toml, each installing the workflow's own package,
named by every rule, and named by the package's version and commit (an edited comment or docstring keeps them).
What Snakemake runs under `--software-deployment-method conda` is tested with the workflow used as a module
(tests/dag/test_module_run.py, with the stand-in `conda` of tests/support/dag.py)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

import lem
from lem.run.envs import ENV_DIR, PackageCode, code_edits, env_text, write_env
from lem.run.job_env import jobs_run_this_lem

REPO = Path(__file__).resolve().parents[2]
ENVS = sorted((REPO / "envs").glob("*.yaml"))
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
PACKAGE_LINE = "lem-pipeline @ ${LEM_PIPELINE_PACKAGE}"  # the light base (envs/core.yaml)
TRAIN_LINE = "lem-pipeline[train] @ ${LEM_PIPELINE_PACKAGE}"  # with the training stack
EXTRAS = PYPROJECT["optional-dependencies"]
TRAINING_STACK = {"torch", "transformers", "faiss-cpu", "stanza", "sentence-transformers", "snakemake"}


def _name(req: str) -> str:
    return re.split(r"[\s<>=!~;\[@]", req, maxsplit=1)[0].lower().replace("_", "-")


REQUIREMENTS = PYPROJECT["dependencies"] + EXTRAS["train"] + EXTRAS["workflow"]
PINS = {_name(req): req.split("==", 1)[1] for req in REQUIREMENTS if "==" in req}


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
        if env.stem == "mining-gpu":  # no rule's: faiss-gpu beside the package's faiss-cpu would clash
            assert "faiss-gpu==" + PINS["faiss-cpu"] in pips and not any("lem-pipeline" in p for p in pips)
            continue
        assert "python=3.11" in deps, env.name  # requires-python >= 3.11
        assert pips[-1] == (PACKAGE_LINE if env.stem == "core" else TRAIN_LINE), env.name
        version = re.search(r"lem-pipeline (\d[\w.]*)[ ,]", env.read_text())
        assert version and version.group(1) == PYPROJECT["version"], f"{env.name}: version comment"
        for req in pips[:-1]:
            name, _, pin = req.partition("==")
            assert pin and PINS.get(_name(name), pin) == pin.split()[0], f"{env.name}: {req} vs pyproject"
            assert _name(name) in PINS, f"{env.name}: {name} not in pyproject"


def test_no_rule_file_sets_a_shell_prefix():
    """The jobs keep Snakemake's `set -euo pipefail`: the `lem` they run is set by the environment they inherit
    (lem.run.job_env), never by a shell prefix."""
    for path in (REPO / "workflow" / "rules").glob("*.smk"):
        assert "shell.prefix" not in path.read_text(), path.name


# --- the rules and their environments, as Snakemake loads the workflow ------------------------------------------


def rule_envs(workdir: Path, configfile: Path | None = None) -> dict[str, tuple[str | None, str]]:
    """rule name -> (its conda environment, its shell command), for the rules that run a command."""
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
        return {r.name: (r.conda_env, r.shellcmd or "") for r in wf._workflow.rules if r.shellcmd or r.script}


def head(root: Path) -> str:
    return subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()  # fmt: skip


def test_every_rule_names_an_environment_that_exists(tmp_path):
    """Every rule that runs the `lem` command names envs/<name>.yaml as generated for this workflow's code
    (common.smk, lem_env): under .snakemake/lem-envs/ of the working directory, the package's source filled in,
    its version and commit on top; no rule's command sets PATH or PYTHONPATH."""
    rules = rule_envs(tmp_path, REPO / "config" / "paper.yaml")
    envs = {rule: env for rule, (env, _) in rules.items()}
    assert len(envs) > 40 and "generate_corpus" not in envs  # the paper config reads real data
    rules_dir = REPO / "workflow" / "rules"
    generated = (tmp_path / ENV_DIR).resolve()
    commit = head(REPO)
    code = PackageCode(REPO.as_uri(), lem.__version__, commit, code_edits(REPO, commit))
    for rule, (env, shell) in rules.items():
        assert "PYTHONPATH" not in shell and "PATH=" not in shell, f"rule {rule}: {shell}"
        assert env, f"rule {rule} names no environment"
        if env == "../../envs/laser.yaml":  # no package installed: the tracked file itself
            continue
        path = Path(env)
        assert path.parent == generated and (REPO / "envs" / path.name).is_file(), f"rule {rule}: {env}"
        template = (REPO / "envs" / path.name).read_text()
        text = path.read_text()
        assert text == env_text(template, path.stem, code), f"rule {rule}"
        assert f"lem-pipeline {lem.__version__} at commit {commit} from {REPO.as_uri()}" in text
        assert "${" not in text and f'@ {REPO.as_uri()}"' in text  # a reader sees what pip installs
        assert (rules_dir / env).resolve() == path
    reference = {rule: env for rule, env in envs.items() if rule.startswith("embed_reference")}
    laser = {env for rule, env in reference.items() if "laser" in rule}
    assert laser == {"../../envs/laser.yaml"}  # Python 3.8, the workflow's LASER script
    assert set(reference.values()) - laser == {str(generated / "train.yaml")}  # sentence-transformers


# --- environments that follow the package's code ------------------------------------------------------------------


def _clone(root: Path) -> tuple[Path, str]:
    """A clone of this repository at its last commit (the package's real files), and that commit."""
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(root)], check=True)
    for key, value in (("user.name", "t"), ("user.email", "t@t"), ("commit.gpgsign", "false")):
        subprocess.run(["git", "-C", str(root), "config", key, value], check=True)
    return root, head(root)


def snakemake_env_hash(env_file: Path, envs_dir: Path) -> str:
    """The hash Snakemake 9 names a conda environment by (snakemake.deployment.conda.Env.hash: the envs
    folder, the env file's bytes, its post-deploy script and pin file if any), `conda` itself not called."""
    from types import SimpleNamespace

    from snakemake.deployment.conda import Env
    from snakemake.sourcecache import SourceCache

    workflow = SimpleNamespace(
        sourcecache=SourceCache(envs_dir / "cache"),
        deployment_settings=SimpleNamespace(apptainer_args=""),
        runtime_paths=[],
    )
    env = Env(workflow, env_file=str(env_file), envs_dir=str(envs_dir))
    env._conda = SimpleNamespace(platform="linux-64")  # for the pin file's name; no conda run
    return env.hash


def test_a_docstring_or_comment_edit_keeps_the_environment_and_new_code_gets_a_new_one(tmp_path):
    """What names an environment is the code's version and commit: in a clone of this repository, uncommitted
    edits of a docstring and a comment of src/lem, and files that are no code (a cache, egg-info, docs, tests)
    keep the env file's bytes and so Snakemake's environment; edited code, a new module or a new commit
    give new ones."""
    root, commit = _clone(tmp_path / "clone")
    module = root / "src" / "lem" / "run" / "envs.py"
    original = module.read_text()
    envs = tmp_path / "conda"

    def identity() -> tuple[bytes, str]:
        c = head(root)
        code = PackageCode(root.as_uri(), lem.__version__, c, code_edits(root, c))
        out = write_env(REPO / "envs" / "core.yaml", tmp_path / "work" / ENV_DIR, code)
        return out.read_bytes(), snakemake_env_hash(out, envs)

    first = identity()
    assert code_edits(root, commit) is None
    assert f"lem-pipeline {lem.__version__} at commit {commit} from {root.as_uri()}".encode() in first[0]
    assert b"uncommitted" not in first[0]
    # a docstring reworded, a comment added: no new code
    assert original.startswith('"""')  # the module's docstring
    module.write_text(original.replace('"""', '"""Reworded. ', 1) + "# a new comment\n")
    assert module.read_text() != original
    (root / "README.md").write_text("other docs\n")
    (root / "tests" / "planning" / "test_envs.py").write_text("")
    (root / "src" / "lem" / "__pycache__").mkdir(exist_ok=True)
    (root / "src" / "lem" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    (root / "src" / "lem_pipeline.egg-info").mkdir(exist_ok=True)
    (root / "src" / "lem_pipeline.egg-info" / "PKG-INFO").write_text("Version: 9\n")
    assert identity() == first  # the same bytes: Snakemake's environment already made
    # the code edited
    module.write_text(original + "\nNEW_CONSTANT = 1\n")
    edited = identity()
    assert edited[0] != first[0] and edited[1] != first[1]
    assert b"uncommitted edits to the code" in edited[0]
    module.write_text(original)
    assert identity() == first
    (root / "src" / "lem" / "new.py").write_text("X = 1\n")  # a new module, not yet committed
    new_module = identity()
    assert new_module[1] not in {first[1], edited[1]}
    (root / "src" / "lem" / "new.py").unlink()
    # a new commit, whatever it changed
    module.write_text(original.replace('"""', '"""Reworded. ', 1))
    subprocess.run(["git", "-C", str(root), "commit", "-q", "-am", "docstring"], check=True)
    committed = identity()
    assert committed[1] not in {first[1], edited[1], new_module[1]} and head(root).encode() in committed[0]


def test_the_code_of_a_module_is_its_syntax_without_docstrings():
    from lem.run.envs import code_text

    a = b'"""Doc."""\n\n\ndef f(x):\n    """Doc."""\n    return x  # c\n\n\nclass C:\n    """Doc."""\n'
    b = b"def f(x):\n    return x\n\n\nclass C:\n    pass\n"
    assert code_text("m.py", a) == code_text("m.py", b)
    assert code_text("m.py", a) != code_text("m.py", b.replace(b"return x", b"return -x"))
    assert code_text("m.py", b"x = 'not a docstring'\n") != code_text("m.py", b"x = 'other'\n")
    assert code_text("data.tsv", b"a\t# b\n") == b"a\t# b\n"  # not Python: its bytes
    assert code_text("bad.py", b"def (:\n") == b"def (:\n"


def test_a_folder_outside_git_is_named_by_its_code(tmp_path):
    root = tmp_path / "pkg"
    (root / "src" / "lem").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "lem-pipeline"\n')
    (root / "src" / "lem" / "__init__.py").write_text('"""Doc."""\nX = 1\n')
    first = code_edits(root, None)
    (root / "src" / "lem" / "__init__.py").write_text('"""Other doc."""\nX = 1  # c\n')
    assert code_edits(root, None) == first and len(first) == 64
    (root / "src" / "lem" / "__init__.py").write_text("X = 2\n")
    assert code_edits(root, None) != first
    text = env_text("x: 1\n", "core", PackageCode(root.as_uri(), "0.1.0", None, first))
    assert f"lem-pipeline 0.1.0 from {root.as_uri()}" in text and f"code outside git: sha256 {first}" in text


def test_a_modules_package_is_named_by_its_file_list():
    """A module from a git repository: its package read file by file (workflow/rules/source.smk) into a folder
    named by its file list's digest, which names its code in place of a commit."""
    code = PackageCode("file:///w/.snakemake/lem-src/" + "d" * 64, "0.1.0", None, files_sha256="d" * 64)
    text = env_text("x: 1\n", "core", code)
    assert (
        "lem-pipeline 0.1.0 of a module, its files' list (workflow/package-files.txt) sha256 " + "d" * 64
        in text
    )


def test_an_env_file_is_rewritten_only_when_its_bytes_change(tmp_path):
    one, two = PackageCode("file:///x", "0.1.0", "1" * 40), PackageCode("file:///x", "0.1.0", "2" * 40)
    out = write_env(REPO / "envs" / "train.yaml", tmp_path, one)
    before = out.stat().st_mtime_ns
    assert write_env(REPO / "envs" / "train.yaml", tmp_path, one) == out
    assert out.stat().st_mtime_ns == before and [p.name for p in tmp_path.iterdir()] == ["train.yaml"]
    write_env(REPO / "envs" / "train.yaml", tmp_path, two)
    assert "2" * 40 in out.read_text() and [p.name for p in tmp_path.iterdir()] == ["train.yaml"]
    assert yaml.safe_load(out.read_text())["dependencies"][-1]["pip"][-1] == "lem-pipeline[train] @ file:///x"


def test_the_base_install_is_light_and_every_requirement_is_pinned():
    """`pip install lem-pipeline` is what planning, the reports and data preparation import (envs/core.yaml):
    no training stack and no Snakemake; `train` and `workflow` are extras; scipy (evidence, `lem plan power`) is
    declared; every requirement is pinned exactly."""
    base = {_name(req) for req in PYPROJECT["dependencies"]}
    assert not base & TRAINING_STACK and "scipy" in base
    assert {"torch", "transformers", "faiss-cpu", "stanza"} <= {_name(r) for r in EXTRAS["train"]}
    assert {"snakemake", "snakemake-executor-plugin-slurm"} <= {_name(r) for r in EXTRAS["workflow"]}
    for req in REQUIREMENTS + EXTRAS["test"]:
        assert re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][0-9A-Za-z.]*", req), req
    core = {_name(p) for p in pip_entries(REPO / "envs" / "core.yaml")}
    assert not core & TRAINING_STACK, sorted(core & TRAINING_STACK)
    setup = (REPO / "scripts" / "setup.sh").read_text()
    assert '-e ".[train,workflow,test]"' in setup  # the development environment: the whole stack


# --- the jobs' `lem`: the package that planned them -------------------------------------------------------------


def test_the_jobs_lem_is_the_planning_pythons_even_behind_another_on_path(tmp_path, monkeypatch):
    """Outside a conda environment the rules' `lem` runs the package that planned them (lem.run.job_env): the
    bin folder of Snakemake's Python comes first on PATH, before a `lem` met earlier (another clone's); the
    folder planning imported `lem` from when its Python has none comes first on PYTHONPATH."""
    decoy = tmp_path / "other-clone" / "bin"
    decoy.mkdir(parents=True)
    (decoy / "lem").write_text("#!/bin/sh\necho another clone\n")
    (decoy / "lem").chmod(0o755)
    bindir = Path(sys.executable).parent
    assert (bindir / "lem").is_file()  # the suite's environment installs the package
    monkeypatch.setenv("PATH", os.pathsep.join([str(decoy), str(bindir), "/usr/bin", "/bin"]))
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    jobs_run_this_lem(None)
    assert os.environ["PATH"].split(os.pathsep)[:2] == [str(bindir), str(decoy)]
    assert shutil.which("lem") == str(bindir / "lem") and os.environ["PYTHONPATH"] == "/elsewhere"
    jobs_run_this_lem(None)  # a SLURM job loads the workflow again: nothing added twice
    assert os.environ["PATH"].split(os.pathsep).count(str(bindir)) == 1
    source = tmp_path / "src"  # planning imported `lem` from here (no `lem` installed)
    jobs_run_this_lem(str(source))
    assert os.environ["PYTHONPATH"].split(os.pathsep) == [str(source), "/elsewhere"]
    probe = subprocess.run(
        [shutil.which("lem"), "--help"], capture_output=True, text=True, env=dict(os.environ)
    )
    assert "another clone" not in probe.stdout
