"""config/gpu-smoke.yaml, shrunk to CPU size and to mining (sentiment and curation off: the shared DAG's code on
CPU), runs its paper-shaped DAG to the report in a temporary folder; `lem plan cost` on the finished run counts
the real features and agrees with the steps training took."""

from __future__ import annotations

import atexit
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from support.dag import CORES, Background, shared_run, snakemake_cmd

REPO = Path(__file__).resolve().parents[2]


def cpu_config() -> dict:
    """gpu-smoke.yaml on CPU: tiny stand-in, few sentences, one pair, two variants, no GPU, mining alone (every
    stage up to it: the stand-in, its tokenizer, pair-scoped training, the NER model fine-tuned from it)."""
    cfg = yaml.safe_load((REPO / "config" / "gpu-smoke.yaml").read_text())
    cfg["languages"], cfg["pairs"], cfg["variants"] = ["si", "en"], ["si-en"], ["base", "lem"]
    cfg["corpus"]["generate"].update(
        mono_sentences=300,
        para_train=200,
        para_valid=30,
        news_documents=6,
        sentiment_examples=200,
        noisy_pairs=60,
    )
    cfg["base_model"]["stand_in"] = {"size": "tiny", "vocab_size": 500}
    cfg["pretrain"]["max_length"] = 48
    cfg["embedding"]["max_length"] = 48
    cfg["ner_model"]["settings"]["max_length"] = 48
    cfg["sentiment"]["training"]["max_length"] = 48
    cfg["mining"]["evalsets"]["news_gen"]["pairs"] = ["si-en"]
    # sentiment and curation off: their jobs read a pair-scoped model folder as mining's embedding does (the
    # wiring: planned for config/paper.yaml in tests/planning); run on CPU they are the shared DAG's code
    cfg["sentiment"]["enabled"] = False
    cfg["curation"]["enabled"] = False
    cfg["resources"]["gpu_training"] = 0
    return cfg


STARTED: dict[str, Background] = {}


def start_run(tmp_path_factory) -> Background:
    """The shrunken gpu-smoke DAG from scratch, in the background, at a lower CPU priority than the shared
    DAG's (tests/conftest.py): it takes the CPU that the other tests leave idle."""
    workdir = tmp_path_factory.mktemp("gpu_smoke")
    (workdir / "config.yaml").write_text(yaml.safe_dump(cpu_config()))
    return Background(workdir, snakemake_cmd(workdir, "--cores", CORES), nice=15, forkserver=True)


def start_in_background(tmp_path_factory) -> None:
    """Called by tests/conftest.py at the session's first test when a test here is selected."""
    STARTED["run"] = shared_run("gpu-smoke", lambda: start_run(tmp_path_factory))
    atexit.register(STARTED["run"].stop)  # when no test of here waits for it (pytest -x)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """The finished run (started at the session's first test, or now)."""
    run = STARTED.pop("run", None) or start_run(tmp_path_factory)
    return run.finish()[0]


def test_the_gpu_smoke_config_is_paper_shaped():
    cfg = yaml.safe_load((REPO / "config" / "gpu-smoke.yaml").read_text())
    assert cfg["pretrain"]["scope"] == "pair" and cfg["tokenizer"]["source"] == "pretrained"
    assert cfg["base_model"] == {"source": "stand_in", "stand_in": {"size": "base", "vocab_size": 8000}}
    assert cfg["resources"]["gpu_training"] == 1


def test_the_dag_runs_on_a_stand_in(run_dir: Path):
    base = run_dir / "resources/hf/lem-stand-in/xlm-roberta-tiny/random"
    assert json.loads((base / "provenance.json").read_text())["random"] is True
    assert "lem_stand_in" in json.loads((base / "config.json").read_text())
    assert not (run_dir / "results/models/base").exists() and not (run_dir / "results/tokenizer").exists()
    seed = cpu_config()["seed"]  # no pretrain.seeds: the run's seed alone
    for stage in ("mono", "para"):
        assert (run_dir / f"results/models/lem/si-en/seed{seed}/{stage}/model.safetensors").is_file()
    summary = pd.read_csv(run_dir / "results/report/summary.tsv", sep="\t")
    assert set(summary[summary.task == "mining"].variant) == {"base", "lem"}
    assert not list(run_dir.rglob("*.bin")), "models must be safetensors"


def test_plan_of_the_finished_run_matches_training(run_dir: Path):
    proc = subprocess.run(
        [sys.executable, "-m", "lem.cli", "plan", "cost", "--configfile", str(run_dir / "config.yaml"),
         "--directory", str(run_dir), "--out", str(run_dir / "plan.json")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    plan = json.loads((run_dir / "plan.json").read_text())
    seed = cpu_config()["seed"]
    assert [j["name"] for j in plan["jobs"]] == [f"lem/si-en/seed{seed}/mono", f"lem/si-en/seed{seed}/para"]
    for job in plan["jobs"]:
        assert job["counts"] == "features"  # exact: counted from the features the jobs trained on
        sel = json.loads((run_dir / f"results/models/{job['name']}/selection.json").read_text())
        assert job["steps"] == sel["global_steps"], job["name"]
    weights = run_dir / "resources/hf/lem-stand-in/xlm-roberta-tiny/random/model.safetensors"
    assert plan["model"]["source"] == f"{weights} (header)"
