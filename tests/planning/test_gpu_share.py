"""Training jobs sharing a GPU (`resources.gpu_share`, lem.core.gpu_share): the resources every training rule asks
for; two training jobs run side by side under the sharing resource writing the files they write one after the
other: tests/dag/test_gpu_share_jobs.py."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from support.dag import snakemake

from lem.core.gpu_share import slots_argument, training_resources

REPO = Path(__file__).resolve().parents[2]
TRAINING_RULES = {"pretrain_base", "pretrain_mono", "pretrain_para", "train_ner", "sentiment", "nmt_run"}
BASE = {"mem_mb_training": 32000, "runtime_training": 2880}


def test_one_gpu_per_job_unless_shared():
    assert training_resources({**BASE, "gpu_training": 1}) == {"gpu": 1, "mem_mb": 32000, "runtime": 2880}
    assert training_resources({**BASE, "gpu_training": 1, "gpu_share": 1})["gpu"] == 1
    shared = training_resources({**BASE, "gpu_training": 1, "gpu_share": 4})
    assert shared == {"gpu": 0, "gpu_slots": 1, "mem_mb": 32000, "runtime": 2880}
    assert training_resources({**BASE, "gpu_training": 0, "gpu_share": 4})["gpu"] == 0  # CPU: nothing shared
    assert "gpu_slots" not in training_resources({**BASE, "gpu_training": 0, "gpu_share": 4})
    with pytest.raises(ValueError, match=r"resources\.gpu_share=2 .* resources\.gpu_training: 1, not 2"):
        training_resources({**BASE, "gpu_training": 2, "gpu_share": 2})
    assert slots_argument({"gpu_share": 4}) == "gpu=1 gpu_slots=4"
    assert slots_argument({"gpu_share": 4}, gpus=2) == "gpu=2 gpu_slots=8"
    assert slots_argument({}) == "gpu=1"


def dry_run_resources(tmp_path: Path, overlay: str) -> dict[str, set[str]]:
    """rule -> the distinct `resources:` lines of its jobs in a dry run of the embedded default with its NMT
    (config/nmt.yaml) + overlay."""
    (tmp_path / "overlay.yaml").write_text(overlay)
    configs = [REPO / "config" / "config.yaml", REPO / "config" / "nmt.yaml", tmp_path / "overlay.yaml"]
    proc = snakemake(tmp_path / "run", "-n", "--cores", "2", config=configs, cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    found: dict[str, set[str]] = {}
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", proc.stdout):
        m = re.match(r"(?:local)?rule (\w+):", block)
        res = re.search(r"resources: (.*)", block)
        if m and res:
            found.setdefault(m.group(1), set()).add(res.group(1))
    return found


def test_every_training_rule_asks_for_a_slot_when_shared(tmp_path):
    found = dry_run_resources(tmp_path, "resources: {gpu_training: 1, gpu_share: 3, threads_training: 1}\n")
    # every training rule is in the embedded default with its NMT
    assert TRAINING_RULES <= set(found), sorted(TRAINING_RULES - set(found))
    for rule, lines in found.items():
        for line in lines:
            if rule in TRAINING_RULES:
                assert "gpu=0" in line and "gpu_slots=1" in line, (rule, line)
            else:
                assert "gpu_slots" not in line, (rule, line)
    plain = dry_run_resources(tmp_path, "resources: {gpu_training: 1}\n")
    for rule in TRAINING_RULES & set(plain):
        assert all("gpu=1" in line and "gpu_slots" not in line for line in plain[rule]), rule


def test_gpu_check_refuses_at_once_without_a_gpu(tmp_path):
    """scripts/gpu-check.sh on a machine (or a test run) that sees no GPU: one line saying so, exit 2, no
    results file, no state folder, nothing started (by default and with --quick)."""
    import os
    import shutil
    import time

    cases = [{"CUDA_VISIBLE_DEVICES": ""}]  # what tests/conftest.py sets: no GPU visible, even on a GPU node
    if shutil.which("nvidia-smi", path="/usr/bin:/bin") is None:
        cases.append({"CUDA_VISIBLE_DEVICES": "0", "PATH": "/usr/bin:/bin"})  # no nvidia-smi at all
    out = tmp_path / "OUT"
    out.mkdir()
    state = tmp_path / "state"
    for env, args in [
        (e, a) for e in cases for a in ([str(tmp_path / "out.jsonl")], ["--quick", "--budget", "100"])
    ]:
        t = time.monotonic()
        proc = subprocess.run(
            ["bash", str(REPO / "scripts" / "gpu-check.sh"), *args], capture_output=True, text=True,
            env={**os.environ, "OUT": str(out), "LEM_GPU_CHECK_STATE": str(state), **env}, cwd=tmp_path,
        )  # fmt: skip
        assert proc.returncode == 2, proc.stderr
        assert proc.stdout == "" and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert (
            proc.stderr.startswith("scripts/gpu-check.sh: no GPU here (")
            and "run it on a GPU node" in proc.stderr
        )
        assert time.monotonic() - t < 5 and not (tmp_path / "out.jsonl").exists()
        assert not list(out.iterdir()) and not state.exists()  # nothing written, no state left


def test_the_plan_uses_the_measured_aggregate_rate_when_jobs_share_a_gpu():
    """`lem plan cost` with resources.gpu_share > 1: plan.shared_tokens_per_second when measured, the one-job
    rate while it is pending, and the table names the figure it used."""
    from lem.plan import training_rate

    assert training_rate({"tokens_per_second": 50_000}) == (50_000.0, "plan.tokens_per_second")
    rate, basis = training_rate({"tokens_per_second": 50_000, "shared_tokens_per_second": "pending"}, 4)
    assert rate == 50_000 and "pending" in basis and "no gain" in basis
    rate, basis = training_rate({"tokens_per_second": 50_000, "shared_tokens_per_second": 150_000}, 4)
    assert (
        rate == 150_000 and basis.startswith("plan.shared_tokens_per_second = 150,000") and "4 jobs" in basis
    )
    assert training_rate({"tokens_per_second": 50_000, "shared_tokens_per_second": 150_000}, 1)[0] == 50_000


def test_the_plan_of_a_config_shared_four_ways(tmp_path):
    from lem.plan import load_config, make_plan, table

    config = load_config([str(REPO / "config" / "config.yaml")])  # the embedded default: a plan in 0.1 s
    config["resources"].update(gpu_training=1, gpu_share=4)
    pending = make_plan(config, tmp_path)  # the one-job rate: no gain counted while pending
    assert pending["tokens_per_second"] == config["plan"]["tokens_per_second"]
    assert "pending" in table(pending) and "no gain" in pending["tokens_per_second_basis"]
    config["plan"]["shared_tokens_per_second"] = 3 * config["plan"]["tokens_per_second"]
    measured = make_plan(config, tmp_path)
    assert measured["totals"]["gpu_hours"] == pytest.approx(pending["totals"]["gpu_hours"] / 3)
    assert "plan.shared_tokens_per_second" in table(measured).split("\n\n")[0].replace("\n", " ")
    assert any("resources.gpu_share = 4" in n and "--concurrent 4" in n for n in measured["notes"])
