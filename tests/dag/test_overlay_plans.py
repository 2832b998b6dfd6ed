"""An overlay added to a finished run of its base config plans only its own jobs (issue 53): no job of the base
run is planned again unless the overlay changes that job's own settings (its params; new seeds and new variants
are new jobs) or it is downstream of one that is; the report, which reads every result, is built again.

A finished run is made without running a job: the base plan's outputs are created (a folder where the name
has no suffix), the leakage guard's report names the evaluation sets the guard was built with (planning reads
it: lem.run.evalsets.guard_eval_files), and `snakemake --touch --forceall` touches them in the DAG's order and
records each job's provenance as a real run does (its input set, params, code and software stack: the rerun
triggers an overlay's plan then sees). The base then plans nothing, and the overlay's dry run says which jobs
run and why. `--touch` executes jobs (their touch), so this module is in the dag tier, not the planning one.

Every overlay shipped in config/ is planned over its base: config/nmt.yaml, ablation.yaml and evidence.yaml
over the embedded default, local-evidence.yaml over config/local.yaml (on the data folder's layout of empty
files: planning reads no data). config/gpu-smoke.yaml is a config of its own, not an overlay.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import yaml
from support.dag import snakemake

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "config"

# the jobs that read every result: an overlay that adds results builds them again (the report, its controls'
# gate, its comparison with the documented run of the same configuration)
AGGREGATES = {"report", "controls_gate", "documented", "all"}
# what the NMT overlay may plan over a finished default: NMT's held-out sets, their leakage check against the
# pre-training text, the control rankings, selection, training and scoring, and the report
NMT_RULES = {"nmt_heldout", "leakage_check", "curate_control", "nmt_select", "nmt_run"} | AGGREGATES


def overlays() -> dict[str, str]:
    """Overlay -> the config it overlays, for every shipped config whose header says it is "an overlay of"
    one (config/local.yaml where named, else the embedded default), as scripts/job_blocks.py reads them."""
    out = {}
    for path in sorted(CONFIG.glob("*.yaml")):
        header = " ".join(ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.startswith("#"))
        found = re.search(r"overlay of (?:config/([\w.-]+\.yaml))?", " ".join(header.lower().split()))
        if found:
            out[path.stem] = Path(found.group(1) or "config.yaml").stem
    return out


def test_every_shipped_overlay_is_planned_here():
    assert {"nmt", "ablation", "evidence", "local-evidence"} <= set(overlays())
    assert overlays()["local-evidence"] == "local" and overlays()["nmt"] == "config"
    assert "gpu-smoke" not in overlays() and "paper" not in overlays()  # configs of their own


def jobs_of(text: str) -> list[dict]:
    """The job blocks of a dry run's output: rule, outputs, reason and (with -p) the shell command."""
    jobs = []
    for block in re.split(r"^(?=(?:local)?rule \w+:$)", text, flags=re.M):
        rule = re.match(r"(?:local)?rule (\w+):$", block, re.M)
        if not rule:
            continue
        output = re.search(r"^\s+output: (.*)$", block, re.M)
        reason = re.search(r"^\s+reason: (.*)$", block, re.M)
        shell = re.search(r"^Shell command: (.*)$", block, re.M)
        jobs.append({
            "rule": rule.group(1),
            "output": output.group(1).split(", ") if output else [],
            "reason": reason.group(1) if reason else "",
            "shell": shell.group(1) if shell else "",
        })  # fmt: skip
    return jobs


def local_data(folder: Path) -> Path:
    """config/local.yaml's data folder as a layout of empty files (every `{data_root}/...` it names)."""
    for rel in re.findall(r"\{data_root\}/([^\"]+)", (CONFIG / "local.yaml").read_text(encoding="utf-8")):
        path = folder / rel
        if path.suffix:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
        else:
            path.mkdir(parents=True, exist_ok=True)
    return folder


def plan(workdir: Path, files: list[Path], extra: list[str], *args: str) -> str:
    proc = snakemake(workdir, *args, "--cores", "1", *extra, config=files)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return proc.stdout + proc.stderr


def finish_without_running(workdir: Path, files: list[Path], extra: list[str]) -> set[str]:
    """A finished run of `files` in `workdir` (module docstring); the outputs of its jobs."""
    jobs = jobs_of(plan(workdir, files, extra, "-n", "-p", "--forceall"))
    outputs = [o for job in jobs for o in job["output"]]
    for out in outputs:
        path = workdir / out
        if Path(out).suffix:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
        else:  # a model, a tokenizer, a dataset on disk, an unpacked folder
            path.mkdir(parents=True, exist_ok=True)
    (guard,) = [job for job in jobs if job["rule"] == "leakage_guard"]
    evals = re.search(r" --eval (.*?) --out-clean ", guard["shell"]).group(1).split()
    report = workdir / next(o for o in guard["output"] if o.endswith(".json"))
    report.write_text(json.dumps({"evals": evals}), encoding="utf-8")
    old = report.stat().st_mtime - 3600
    for out in outputs:  # one time for all: --touch orders them as the DAG does
        os.utime(workdir / out, (old, old))
    plan(workdir, files, extra, "--touch", "--forceall")
    again = jobs_of(plan(workdir, files, extra, "-n"))
    assert not again, f"a finished run of {files[-1].name} plans jobs again by itself:\n" + "\n".join(
        f"  {job['rule']} {(job['output'] or [''])[0]}: {job['reason']}" for job in again
    )
    return set(outputs)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """Base config name -> (its config files, the extra --config items, the folder of its finished run and the
    outputs of its jobs), made once per base."""
    made: dict[str, tuple | AssertionError] = {}

    def get(base: str) -> tuple:
        if base not in made:
            files = [CONFIG / f"{base}.yaml"]
            extra = []
            if base == "local":
                extra = ["--config", f"data_root={local_data(tmp_path_factory.mktemp('data'))}"]
            workdir = tmp_path_factory.mktemp(f"finished-{base}")
            try:
                made[base] = (files, extra, workdir, finish_without_running(workdir, files, extra))
            except AssertionError as failed:  # said once per base, not made again for each overlay
                made[base] = failed
        if isinstance(made[base], AssertionError):
            pytest.fail(str(made[base]), pytrace=False)
        return made[base]

    return get


def replanned_without_cause(jobs: list[dict], base_outputs: set[str]) -> list[dict]:
    """The jobs of the base run planned again that the overlay gives no cause: neither an aggregate, nor a
    job whose params changed (the overlay changed its own settings), nor one whose only reason is an input that
    such a job (or one downstream of it) updates."""
    again = [job for job in jobs if set(job["output"]) & base_outputs]
    allowed = [j for j in again if j["rule"] in AGGREGATES or "Params have changed" in j["reason"]]
    updated = {o for j in allowed for o in j["output"]}
    changed = True
    while changed:
        changed = False
        for job in again:
            if job in allowed:
                continue
            by = re.fullmatch(r"Input files updated by another job: (.*)", job["reason"])
            if by and set(by.group(1).split(", ")) <= updated:
                allowed.append(job)
                updated |= set(job["output"])
                changed = True
    return [job for job in again if job not in allowed]


@pytest.mark.parametrize("overlay", sorted(overlays()))
def test_an_overlay_over_a_finished_base_plans_only_its_own_jobs(finished, overlay):
    files, extra, workdir, base_outputs = finished(overlays()[overlay])
    jobs = jobs_of(plan(workdir, [*files, CONFIG / f"{overlay}.yaml"], extra, "-n"))
    new = [job for job in jobs if job["output"] and not set(job["output"]) & base_outputs]
    assert new, f"{overlay}: plans no job of its own over a finished {files[0].name}"
    wrong = replanned_without_cause(jobs, base_outputs)
    assert not wrong, (
        f"{overlay} over a finished {files[0].name} plans jobs of the base run again:\n"
        + "\n".join(f"  {job['rule']} {job['output'][0]}: {job['reason']}" for job in wrong)
    )
    if overlay == "nmt":  # the acceptance of issue 53: NMT's jobs and the report, nothing of the base run
        assert {job["rule"] for job in jobs} <= NMT_RULES, sorted({job["rule"] for job in jobs} - NMT_RULES)
        again = {job["rule"] for job in jobs if set(job["output"]) & base_outputs}
        assert again <= AGGREGATES, again
        nmt = yaml.safe_load((CONFIG / "nmt.yaml").read_text(encoding="utf-8"))["curation"]["nmt"]["pairs"]
        checked = [job for job in jobs if job["rule"] == "leakage_check"]
        assert [
            Path(job["output"][0]).stem for job in checked
        ] == nmt  # the held-out sets vs pre-training text
