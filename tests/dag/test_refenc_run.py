"""Reference encoders enabled without their models: the dry run plans the rows ref_<name>, and a real run stops
at the first of their jobs with one line saying what to do. The encoders themselves: tests/unit/test_refenc.py."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import yaml
from support.dag import snakemake
from support.reference import COMMIT, planned_jobs, reference_rows

REPO = Path(__file__).resolve().parents[2]


def test_enabled_without_models_the_run_stops_at_the_first_reference_job_with_its_message(tmp_path):
    """The issue's done-when: the backends enabled and no model present, the dry run plans them and a real
    run stops at the first of them with one line saying what to do (here, without conda: the laser script runs
    on this Python and says to use envs/laser.yaml; the LaBSE job is not in the empty cache)."""
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    cfg["corpus"]["generate"].update(
        mono_sentences=60,
        para_train=40,
        para_valid=10,
        news_documents=4,
        sentiment_examples=30,
        noisy_pairs=8,
    )
    cache = tmp_path / "hf-cache"
    cfg["reference_encoders"] = {
        "laser": {"settings": {"backend": "laser", "model_dir": str(tmp_path / "no-models")}},
        "labse": {"settings": {"backend": "sentence_transformers", "model": "sentence-transformers/LaBSE",
                               "revision": COMMIT, "local_files_only": True, "cache_dir": str(cache)}},
    }  # fmt: skip
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(cfg))
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    jobs = planned_jobs(snakemake(tmp_path, "-n", config=config, env=env))
    assert reference_rows(jobs, laser=True) == {"ref_laser"} and reference_rows(jobs, laser=False) == {
        "ref_labse"
    }
    assert {"ref_laser", "ref_labse", "control_random"} <= jobs["mine"]
    assert {"ref_laser", "ref_labse"} & jobs["embed_news_gen"] == set()

    first = cfg["pretrain"]["seeds"][0]  # rows with no pre-training have the first seed's folder
    targets = [
        f"results/embeddings/{row}/seed{first}/news_gen/si-en/si.npy" for row in ("ref_laser", "ref_labse")
    ]
    logs = {
        row: tmp_path / "logs" / "embed" / row / f"seed{first}" / "news_gen" / "reference.log"
        for row in ("ref_laser", "ref_labse")
    }
    messages = {
        "ref_laser": "laser_encode: the laser backend needs Python 3.8 to 3.10; this is Python "
        f"{sys.version_info[0]}.{sys.version_info[1]} (laser-encoders 0.0.2 imports fairseq 0.12.2",
        "ref_labse": "lem reference encode: sentence-transformers model sentence-transformers/LaBSE@"
        f"{COMMIT} is not in the Hugging Face cache ({cache}) and could not be fetched",
    }
    proc = snakemake(tmp_path, "--cores", "1", *targets, config=config, env=env)
    assert proc.returncode != 0
    failed = [row for row, log in logs.items() if log.exists()]
    assert len(failed) == 1, proc.stdout + proc.stderr  # it stops at the first
    assert f"Error in rule embed_reference{'_laser' if failed == ['ref_laser'] else ''}" in proc.stderr

    def says_what_to_do(row: str) -> None:
        lines = logs[row].read_text().strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(messages[row]), lines
        assert ("--software-deployment-method conda" if row == "ref_laser" else "hf download") in lines[0]
        assert not list((tmp_path / "results" / "embeddings" / row).rglob("*.npy"))

    says_what_to_do(failed[0])
    proc = snakemake(tmp_path, "--cores", "1", "--keep-going", *targets, config=config, env=env)
    assert proc.returncode != 0
    for row in logs:  # the other one too: each says what to do, in one line
        says_what_to_do(row)
