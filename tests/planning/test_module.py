"""The workflow used the Snakemake way, from another folder: deployed as a `module` in the layout snakedeploy
writes (the user's workflow/Snakefile declares the module and uses all its rules; config/config.yaml is the
user's), planned with the user's config (a small target run to the end in its rule's environment, a stand-in
conda: tests/dag/test_module_run.py). Nothing of the deploying folder is taken for the workflow's own files (its
environments, its package, its scripts), and planning imports no heavy stack (torch, transformers, faiss)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support.builders import OVERLAY, deployed_module
from support.dag import TEST_CONFIG, shrunken_config_text

REPO = Path(__file__).resolve().parents[2]

# pyproject.toml's packages that planning never imports. Planning needs numpy only besides Snakemake and its own
# dependencies (PyYAML, jsonschema, requests): workflow/rules/common.smk, tests/dag/test_planning_env.py. pandas
# (and pyarrow through it) stay out of this set because Snakemake's `validate` imports pandas when it is installed; scipy,
# sacrebleu and tqdm are not imported by planning but are light.
HEAVY = {"torch", "transformers", "accelerate", "tokenizers", "sentencepiece", "safetensors", "datasets",
         "huggingface_hub", "faiss", "matplotlib", "sklearn", "sklearn_crfsuite", "sinling", "stanza", "seqeval",
         "sentence_transformers"}  # fmt: skip

# Runs Snakemake's command line in this process and writes the names of the modules it imported.
IMPORTS = """import json, runpy, sys
out = sys.argv[1]
sys.argv = ["snakemake", *sys.argv[2:]]
try:
    runpy.run_module("snakemake", run_name="__main__", alter_sys=True)
finally:
    with open(out, "w") as f:
        json.dump(sorted(sys.modules), f)
"""


@pytest.fixture
def deployed(tmp_path) -> Path:
    return deployed_module(tmp_path)


def test_a_module_plans_with_the_users_overlay_and_imports_no_heavy_stack(deployed, tmp_path):
    """A dry run in the deploying folder (Snakemake finds workflow/Snakefile there, as the catalog's usage
    says): the overlay's six keys merged over the embedded default by Snakemake (its rows and seed planned,
    sentiment switched off), the LASER rule runs the module's own script, no path points into the deploying
    folder's workflow/ or envs/, and torch, transformers and faiss are never imported."""
    assert len(yaml.safe_load(OVERLAY)) == 6
    (tmp_path / "imports.py").write_text(IMPORTS)
    modules = tmp_path / "modules.json"
    proc = subprocess.run([sys.executable, str(tmp_path / "imports.py"), str(modules), "-n", "-p"],
                          capture_output=True, text=True, cwd=deployed)  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "Job stats:" in out and "\nrule report:" in out
    assert "results/models/lem/tri/seed7/para" in out and "results/models/mlm_tlm" not in out
    assert "results/embeddings/ref_laser/seed7/" in out and "\nrule sentiment:" not in out
    assert "\nrule mine:" in out and "\nrule nmt_run:" in out  # the default's tasks the overlay keeps or adds
    laser = [line for line in out.splitlines() if "laser_encode.py" in line]
    script = REPO / "workflow" / "scripts" / "laser_encode.py"
    assert laser and all(line.startswith(f"Shell command: python {script} ") for line in laser)
    plan = out.split("Building DAG of jobs", 1)[1]  # the jobs, after Snakemake's header
    for own in ("workflow", "envs", "src", "scripts"):
        assert str(deployed / own) not in plan
    imported = {name.split(".")[0] for name in json.loads(modules.read_text())}
    assert "lem" in imported and "snakemake" in imported
    assert not imported & HEAVY, sorted(imported & HEAVY)


def test_the_test_config_is_the_suites_shrunken_dag():
    """.test/config/config.yaml (the catalog's `.test/` config, runnable by anyone) is the shrunken embedded
    default that CI's whole-DAG run uses (tests/support/dag.py's small_config), generated from
    config/config.yaml."""
    assert TEST_CONFIG.read_text(encoding="utf-8") == shrunken_config_text(), (
        f"{TEST_CONFIG} is not current (config/config.yaml or tests/support/dag.py changed): "
        "run `python tests/support/dag.py`"
    )


def test_an_overlay_switches_a_task_off_by_an_explicit_key():
    from lem.config_check import ConfigError, switch_off

    cfg = {
        "sentiment": {"enabled": False, "datasets": {"x": {}}},
        "curation": {"enabled": True, "corpora": {}},
    }
    assert switch_off(cfg) == {
        "sentiment": {},
        "curation": {"corpora": {}},
    }  # as if left out; the key taken out
    with pytest.raises(ConfigError, match=r"^sentiment.enabled: 'no': expected true or false$"):
        switch_off({"sentiment": {"enabled": "no"}})


def test_a_refusal_in_an_overlay_names_the_key_of_the_merged_config(tmp_path):
    """The config check sees the config the files make merged in order (as Snakemake merges them; `lem plan
    cost` and the workflow run the same check): a mistake in an overlay is refused in one line naming the key."""
    from lem.config_check import ConfigError, check_workflow_config
    from lem.plan import SCHEMA, deep_update

    overlay = {"mining": {"settings": {"kk": 4}}, "sentiment": {"enabled": False}}
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    deep_update(config, overlay)
    with pytest.raises(ConfigError, match=r"^mining\.settings\.kk: unknown key") as err:
        check_workflow_config(config, SCHEMA)
    assert "\n" not in str(err.value)
