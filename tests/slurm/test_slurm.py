"""The workflow through a real SLURM: `snakemake --workflow-profile profiles/slurm` on a small config.

Needs a running cluster whose node has a GPU gres (CI starts a single-node one with .ci/slurm-up.sh and
a fake GPU); skips, saying why, otherwise, or fails instead when LEM_REQUIRE_SLURM=1. The target is
the training branch (`results/models/base/seed<first>`: corpus, annotation, tokenizer, features, base model), whose
pretrain_base job asks for `gpu: 1` in the profile; LEM_SLURM_TARGET picks another target and
LEM_SLURM_TIMEOUT the limit in seconds (default 900).
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from support.dag import Background, shared_run, snakemake, snakemake_cmd

REPO = Path(__file__).resolve().parents[2]
PROFILE = REPO / "profiles" / "slurm"
# the base model of the first pre-training seed
DEFAULT_TARGET = "results/models/base/seed{}".format(
    yaml.safe_load((REPO / "config" / "config.yaml").read_text())["pretrain"]["seeds"][0]
)
TARGET = os.environ.get("LEM_SLURM_TARGET", DEFAULT_TARGET)
TIMEOUT_S = int(os.environ.get("LEM_SLURM_TIMEOUT", "900"))
SUBMITTED = re.compile(r"Job (\d+) has been submitted with SLURM jobid (\d+) \(log: (\S+)\)\.")


def unavailable(reason: str) -> None:
    """Skip, or fail when the caller (CI) said a cluster must be there."""
    if os.environ.get("LEM_REQUIRE_SLURM") == "1":
        pytest.fail(f"LEM_REQUIRE_SLURM=1 but {reason}")
    pytest.skip(reason)


def run(*cmd: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def gpu_rules() -> set[str]:
    """Rules the profile gives a GPU."""
    profile = yaml.safe_load((PROFILE / "config.yaml").read_text())
    return {rule for rule, res in profile.get("set-resources", {}).items() if int(res.get("gpu", 0)) >= 1}


def find_cluster() -> tuple[str | None, str]:
    """(the name of an up node with a GPU gres, "") or (None, why there is none)."""
    if shutil.which("sinfo") is None or shutil.which("sbatch") is None:
        return None, "no SLURM client commands (start one with .ci/slurm-up.sh)"
    try:
        proc = run("sinfo", "--noheader", "--Node", "--format=%N|%T|%G")
    except subprocess.TimeoutExpired:
        return None, "sinfo timed out"
    if proc.returncode != 0:
        return None, (
            f"sinfo failed (is SLURM_CONF set? start a cluster with .ci/slurm-up.sh): {proc.stderr.strip()}"
        )
    nodes = [line.split("|") for line in proc.stdout.split() if line.count("|") == 2]
    up = [
        n for n, state, gres in nodes if state.rstrip("*") in {"idle", "mixed", "allocated"} and "gpu" in gres
    ]
    if not up:
        return None, f"no up node with a GPU gres in `sinfo`: {proc.stdout.strip()!r}"
    # The executor's job step drops SLURM_CONF before its nested srun, which then reads the default
    # /etc/slurm/slurm.conf: a different file there means jobs talk to another cluster, or to none.
    conf = os.environ.get("SLURM_CONF")
    if conf and Path("/etc/slurm/slurm.conf").resolve() != Path(conf).resolve():
        return None, f"SLURM_CONF={conf} is not /etc/slurm/slurm.conf, which srun inside jobs reads"
    return up[0][0], ""


@pytest.fixture(scope="module")
def cluster() -> str:
    """The name of an up node with a GPU gres, or skip."""
    node, reason = find_cluster()
    if node is None:
        unavailable(reason)
    return node


def shrink(section: dict, **sizes) -> None:
    """Set the sizes this config section already has (keys the stage renamed are left alone)."""
    section.update({k: v for k, v in sizes.items() if k in section})


def small_config() -> dict:
    """The embedded default, shrunk so the training branch takes about a minute: two languages and one pair
    (fewer annotation and feature jobs, each a SLURM job with its own scheduling latency)."""
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    cfg["languages"], cfg["pairs"] = ["si", "en"], ["si-en"]
    cfg["corpus"]["generate"]["noisy_extra_pairs"] = {}
    cfg["mining"]["evalsets"]["news_gen"]["pairs"] = ["si-en"]
    cfg["curation"]["corpora"] = {"si-en": cfg["curation"]["corpora"]["si-en"]}
    shrink(
        cfg["corpus"]["generate"],
        mono_sentences=300,
        para_train=200,
        para_valid=30,
        news_docs=6,
        news_documents=6,
        sentiment_examples=200,
        noisy_pairs=60,
    )
    cfg["tokenizer"]["vocab_size"] = 600
    shrink(cfg["base_model"]["model"], hidden_size=32, intermediate_size=64)
    shrink(cfg["base_model"]["training"], epochs=1)
    cfg["pretrain"]["max_length"] = 32
    shrink(cfg.get("embedding", {}), max_length=32)
    shrink(cfg.get("sentiment", {}).get("training", {}), max_length=32)
    shrink(cfg.get("ner_model", {}).get("settings", {}), max_length=32)  # at most the model's (config_check)
    return cfg


def scontrol_job(jobid: str, workdir: Path) -> str:
    """`scontrol --details show job` of a job of the run: as saved when the run ended (the controller forgets
    a finished job after MinJobAge, 300 s by default, and the run may end long before these tests), else now."""
    saved = workdir / f"slurm-job-{jobid}.txt"
    if saved.exists():
        text = saved.read_text()
        assert f"JobId={jobid} " in text, f"scontrol show job {jobid} when the run ended: {text}"
        return text
    proc = run("scontrol", "--details", "show", "job", jobid)
    assert proc.returncode == 0, f"scontrol show job {jobid}: {proc.stderr}"
    return proc.stdout


def start_run(workdir: Path) -> Background:
    """Snakemake through SLURM on the target, in the background (its output: workdir/snakemake.out)."""
    (workdir / "config.yaml").write_text(yaml.safe_dump(small_config()))
    # The cluster here has no accounting database (sacct would hang), 2 CPUs, and a local disk. The first
    # status check comes 6 s after a submission, when a job of this config (two Snakemake starts and the
    # job, 3 to 7 s) is mostly done: each check that finds none finished waits 10 s longer for the next.
    args = ["--workflow-profile", str(PROFILE), "--slurm-status-command", "squeue", "--cores", "2"]
    args += ["--jobs", "4", "--latency-wait", "10", "--slurm-keep-successful-logs"]
    args += ["--slurm-init-seconds-before-status-checks", "6", "--seconds-between-status-checks", "3"]
    args += ["--show-failed-logs", TARGET]
    cmd = ["timeout", "-s", "INT", "-k", "30", str(TIMEOUT_S), *snakemake_cmd(workdir, *args)]
    # then each submitted job's record, saved while the controller still has it (see scontrol_job)
    save = (
        '"$@"; rc=$?; for id in $(sed -n "s/.* has been submitted with SLURM jobid \\([0-9]*\\) .*/\\1/p" '
        'snakemake.out); do scontrol --details show job "$id" > "slurm-job-$id.txt" 2>&1; done; exit $rc'
    )
    return Background(workdir, ["bash", "-c", save, "bash", *cmd])


STARTED: dict[str, Background] = {}


def start_in_background(tmp_path_factory) -> None:
    """Called by tests/conftest.py at the session's first test when a test here is selected: the SLURM run
    starts then, when a cluster is up (it mostly waits for the scheduler, beside the other tests)."""
    if find_cluster()[0] is not None:
        STARTED["run"] = shared_run("slurm", lambda: start_run(tmp_path_factory.mktemp("slurm")))
        atexit.register(STARTED["run"].stop)  # when no test of here waits for it (pytest -x)


@pytest.fixture(scope="module")
def slurm_run(cluster: str, tmp_path_factory) -> tuple[Path, str]:
    """Run the target through SLURM once (or take the run started at the session's start); the work folder
    and Snakemake's output."""
    run = STARTED.pop("run", None) or start_run(tmp_path_factory.mktemp("slurm"))
    try:
        returncode = run.wait()
        if returncode != 0:
            out = run.log.read_text()
            logs = "\n".join(
                f"--- {p}\n{p.read_text()[-2500:]}" for p in sorted((run.workdir / "logs").rglob("*.log"))
            )
            pytest.fail(
                f"snakemake through SLURM exited {returncode} (124: timed out):\n{out[-6000:]}\n"
                f"{logs[-8000:]}"
            )
        return run.finish()
    finally:
        run.stop()


def test_target_is_built(slurm_run):
    workdir, _ = slurm_run
    target = workdir / TARGET
    assert target.exists(), f"{TARGET} is missing after a successful run"
    if TARGET == DEFAULT_TARGET:
        assert (target / "model.safetensors").stat().st_size > 0
        assert (target / "config.json").is_file()


def test_every_job_went_through_slurm(slurm_run):
    workdir, out = slurm_run
    submitted = SUBMITTED.findall(out)
    assert submitted, f"no job was submitted to SLURM:\n{out[-3000:]}"
    stats = out.split("Job stats:", 1)[1].split("\n\n", 1)[0]
    total = int(re.search(r"^total\s+(\d+)", stats, re.M).group(1))
    assert len(submitted) == total, f"{len(submitted)} SLURM jobs for {total} Snakemake jobs:\n{stats}"
    for _, jobid, log in submitted:
        log_path = Path(log)
        assert log_path.is_relative_to(workdir / ".snakemake" / "slurm_logs"), log
        assert log_path.is_file(), f"SLURM log {log} of job {jobid} is missing"
        info = scontrol_job(jobid, workdir)
        assert "JobState=COMPLETED" in info, info
        assert "NodeList=" in info and "ExitCode=0:0" in info, info
    # Nothing left to do: Snakemake's metadata agrees with what the SLURM jobs wrote.
    dry = snakemake(workdir, "--cores", "1", "-n", TARGET)
    assert dry.returncode == 0 and "Nothing to be done" in dry.stdout + dry.stderr, dry.stdout + dry.stderr


def test_gpu_job_was_scheduled_on_the_gpu(slurm_run, cluster: str):
    workdir, out = slurm_run
    gpu_jobs = []
    for _, jobid, log in SUBMITTED.findall(out):
        rule = Path(log).relative_to(workdir / ".snakemake" / "slurm_logs").parts[0].removeprefix("rule_")
        if rule in gpu_rules():
            gpu_jobs.append((rule, jobid, Path(log)))
    if not gpu_jobs:
        if TARGET != DEFAULT_TARGET:
            pytest.skip(f"target {TARGET} runs none of the profile's GPU rules {sorted(gpu_rules())}")
        pytest.fail(f"no job of a GPU rule {sorted(gpu_rules())} ran for {TARGET}")
    for rule, jobid, log in gpu_jobs:
        info = scontrol_job(jobid, workdir)
        # SLURM allocated the node's GPU to the job (JOB_GRES is what was granted, not just asked).
        assert re.search(r"JOB_GRES=gpu:1\b", info), f"{rule} job {jobid} got no GPU:\n{info}"
        assert f"NodeList={cluster}" in info, info
        assert re.search(r"TresPerJob=gres:gpu:1\b", info), (
            f"{rule} job {jobid} did not ask for one GPU:\n{info}"
        )
        # The Snakemake job step inside that allocation ran the rule with the profile's resources.
        text = log.read_text()
        assert re.search(r"resources: .*\bgpu=1\b", text), f"{log} shows no gpu=1 job:\n{text[-2000:]}"
        assert f"Finished jobid: 0 (Rule: {rule})" in text, text[-2000:]
