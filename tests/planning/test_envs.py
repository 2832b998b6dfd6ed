"""The rules' environments (envs/*.yaml): pinned as pyproject.toml, each installing the workflow's own package,
named by every rule. What Snakemake runs under `--software-deployment-method conda` is tested with the workflow
used as a module (tests/dag/test_module_run.py, with the stand-in `conda` of tests/support/dag.py)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

from lem.run.envs import ENV_DIR, env_text, package_digest, write_env

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
    """Every rule that runs the `lem` command names envs/<name>.yaml as generated for this package's source
    (common.smk, lem_env): under .snakemake/lem-envs/ of the working directory, with the digest on top."""
    envs = rule_envs(tmp_path, REPO / "config" / "paper.yaml")
    assert len(envs) > 40 and "generate_corpus" not in envs  # the paper config reads real data
    rules_dir = REPO / "workflow" / "rules"
    generated = (tmp_path / ENV_DIR).resolve()
    digest = package_digest(REPO.as_uri())
    for rule, env in envs.items():
        assert env, f"rule {rule} names no environment"
        if env == "../../envs/laser.yaml":  # no package installed: the tracked file itself
            continue
        path = Path(env)
        assert path.parent == generated and (REPO / "envs" / path.name).is_file(), f"rule {rule}: {env}"
        template = (REPO / "envs" / path.name).read_text()
        assert path.read_text() == env_text(template, path.stem, REPO.as_uri(), digest), f"rule {rule}"
        assert (rules_dir / env).resolve() == path
    reference = {rule: env for rule, env in envs.items() if rule.startswith("embed_reference")}
    laser = {env for rule, env in reference.items() if "laser" in rule}
    assert laser == {"../../envs/laser.yaml"}  # Python 3.8, the workflow's LASER script
    assert set(reference.values()) - laser == {str(generated / "train.yaml")}  # sentence-transformers


# --- environments that follow the package's code ------------------------------------------------------------------


def _package(root: Path) -> Path:
    """A package folder like the workflow's: pyproject.toml and src/ (with a cache and egg-info beside)."""
    (root / "src" / "lem" / "__pycache__").mkdir(parents=True)
    (root / "src" / "lem_pipeline.egg-info").mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "lem-pipeline"\nversion = "0.1.0"\n')
    (root / "src" / "lem" / "__init__.py").write_text("")
    (root / "src" / "lem" / "cli.py").write_text("def main():\n    return 0\n")
    (root / "src" / "lem" / "__pycache__" / "cli.cpython-311.pyc").write_bytes(b"\0")
    (root / "src" / "lem_pipeline.egg-info" / "PKG-INFO").write_text("Version: 0.1.0\n")
    (root / "README.md").write_text("docs\n")
    return root


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


def test_new_package_code_gives_a_new_environment_and_the_same_code_the_same(tmp_path):
    """The digest follows the package's code (a source file, the version in pyproject.toml) and nothing else
    (caches, egg-info, docs); a new digest gives env file bytes of its own, so a new Snakemake environment."""
    root = _package(tmp_path / "pkg")
    package = root.as_uri()
    first = package_digest(package)
    assert package_digest(package) == first and len(first) == 64
    (root / "README.md").write_text("other docs\n")
    (root / "src" / "lem" / "__pycache__" / "cli.cpython-311.pyc").write_bytes(b"\1")
    (root / "src" / "lem_pipeline.egg-info" / "PKG-INFO").write_text("Version: 0.2.0\n")
    assert package_digest(package) == first  # no package code changed: the same environment
    (root / "src" / "lem" / "cli.py").write_text("def main():\n    return 1\n")
    second = package_digest(package)
    (root / "pyproject.toml").write_text('[project]\nname = "lem-pipeline"\nversion = "0.2.0"\n')
    third = package_digest(package)
    (root / "src" / "lem" / "new.py").write_text("")
    assert len({first, second, third, package_digest(package)}) == 4
    # a git source: its tag or commit names the code
    tagged = "git+https://github.com/x/lem-pipeline@v0.1.0"
    assert package_digest(tagged) != package_digest(tagged.replace("v0.1.0", "abc123"))

    envs = tmp_path / "conda"
    files = {}
    for label, digest in (("a", first), ("b", second), ("a again", first)):
        out = write_env(REPO / "envs" / "core.yaml", tmp_path / label / ENV_DIR, package, digest)
        assert out.name == "core.yaml" and out.is_absolute()
        assert yaml.safe_load(out.read_text()) == yaml.safe_load((REPO / "envs" / "core.yaml").read_text())
        files[label] = (out.read_bytes(), snakemake_env_hash(out, envs))
    assert files["a"] == files["a again"]  # the same code: the same bytes, the environment already made
    assert files["a"][0] != files["b"][0] and files["a"][1] != files["b"][1]
    assert f"source sha256 (pyproject.toml and src/): {second}" in files["b"][0].decode()


def test_an_env_file_is_rewritten_only_when_its_bytes_change(tmp_path):
    out = write_env(REPO / "envs" / "train.yaml", tmp_path, "file:///x", "1" * 64)
    before = out.stat().st_mtime_ns
    assert write_env(REPO / "envs" / "train.yaml", tmp_path, "file:///x", "1" * 64) == out
    assert out.stat().st_mtime_ns == before and [p.name for p in tmp_path.iterdir()] == ["train.yaml"]
    write_env(REPO / "envs" / "train.yaml", tmp_path, "file:///x", "2" * 64)
    assert "2" * 64 in out.read_text() and [p.name for p in tmp_path.iterdir()] == ["train.yaml"]


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
