"""The suite's one way to run Snakemake (snakemake_cmd, snakemake, Background: every test's command line comes
from here) and the whole-DAG helpers shared by the workflow, interruption and reproducibility tests: the
shrunken embedded default, a run in a temporary folder (in the foreground, or started in the background and
waited for), and the digests of every metrics file and the report."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from lem.core.forkserver import alive

REPO = Path(__file__).resolve().parents[2]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
CORES = "2"


def small_config(reference_model: Path | None = None) -> dict:
    """The embedded default, shrunk to what the DAG-level tests read: the default's three rows (base, mlm_tlm
    and lem; the ablation variants only change the masking, tested at unit level (tests/unit/test_masking.py:
    every set of entity types), and their planning and aliases by dry runs in tests/planning/test_configs.py), two pre-training seeds (intervals
    and pooled paired tests), curation and NMT on si-en at one kept share, and NMT a few steps long (the wiring,
    not the translation quality). With `reference_model` (a local sentence-transformers folder), a reference
    encoder row `ref_tiny` too."""
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    cfg["corpus"]["generate"].update(
        mono_sentences=400,
        para_train=300,
        para_valid=40,
        news_documents=8,
        sentiment_examples=300,
        noisy_pairs=80,
        noisy_extra_pairs={"si-en": 40},  # NMT's pair: a few more rows (the default: thousands)
    )
    cfg["tokenizer"]["vocab_size"] = 800
    cfg["base_model"]["model"].update(hidden_size=32, intermediate_size=64)
    cfg["base_model"]["training"]["epochs"] = 1
    for stage in ("mono", "para"):
        cfg["pretrain"]["stages"][stage]["epochs"] = {"default": 1}
    cfg["pretrain"]["max_length"] = 48
    cfg["embedding"]["max_length"] = 48
    cfg["sentiment"]["training"]["max_length"] = 48
    cfg["ner_model"]["settings"].update(epochs=1, max_length=48)
    cfg["sentiment"]["seeds"] = [1]
    cfg["sentiment"]["training"]["epochs"] = 1
    cfg["pretrain"]["seeds"] = [1, 2]  # intervals over seeds and pooled paired tests
    cfg["controls"]["random_seeds"] = 1  # one random draw (its pooling over draws: tests/unit/test_report.py)
    cfg["curation"]["corpora"] = {"si-en": cfg["curation"]["corpora"]["si-en"]}  # the NMT pair
    cfg["curation"]["settings"]["keep_fractions"] = [0.5]
    cfg["curation"]["nmt"]["pairs"] = ["si-en"]  # as config/nmt.yaml: the embedded default runs no NMT
    cfg["curation"]["nmt"]["no_filter"] = True  # its wiring (the embedded default leaves the run out)
    cfg["curation"]["nmt"]["settings"].update(  # NMT: the wiring, not the translation quality
        vocab_size=300, hidden=32, heads=2, ffn=64, max_steps=6, evaluations=1, bootstrap_samples=50
    )
    if reference_model is not None:
        cfg["reference_encoders"] = {
            "tiny": {"settings": {"backend": "sentence_transformers", "model": str(reference_model),
                                  "device": "cpu"}}
        }  # fmt: skip
    return cfg


TEST_CONFIG = REPO / ".test" / "config" / "config.yaml"
TEST_CONFIG_HEADER = """\
# The suite's shrunken embedded default (tests/support/dag.py, small_config): the whole DAG that
# tests/conftest.py's dag_reference runs in CI (there with a tiny local sentence-transformers model as reference
# encoder row `ref_tiny`). Generated: `python tests/support/dag.py` writes it; tests/planning/test_module.py checks
# it is current. Run it:
#   snakemake --cores all --configfile .test/config/config.yaml --directory runs/test
"""


def shrunken_config_text() -> str:
    """.test/config/config.yaml's text: small_config() (no reference encoder) as YAML, under its header."""
    return TEST_CONFIG_HEADER + yaml.safe_dump(small_config(), sort_keys=False, width=110)


SNAKEFILE = REPO / "Snakefile"

# What a dry run passes: Snakemake plans, prints or unlocks, and runs no job (the fast tiers may call these).
NO_JOB_FLAGS = {"-n", "--dry-run", "--dryrun", "--lint", "--unlock", "--dag", "--rulegraph", "--filegraph",
                "--list-rules", "--list", "-l", "--list-target-rules", "--lt", "--summary", "-S",
                "--detailed-summary", "-D", "--d3dag"}  # fmt: skip

# The tier of the test now running (its folder), set by tests/conftest.py before each test: a Snakemake run
# that executes jobs from a test of a fast tier (tests/unit, tests/planning) fails, saying where it belongs.
RUNNING: dict[str, object] = {"test": None, "tiers": frozenset()}
JOB_TIERS = frozenset({"dag", "slurm", "gpu", "realdata"})


def snakemake_cmd(
    workdir: Path,
    *args: str,
    config: Path | str | list | tuple | None = "config.yaml",
    snakefile: Path | None = SNAKEFILE,
) -> list[str]:
    """The one Snakemake command line of the suite: `python -m snakemake --snakefile S --directory workdir ARGS
    --configfile C...`. `config`: a path (relative ones are read from `workdir`), several (an overlay after the
    config it changes), or None for no --configfile; `snakefile`: None lets Snakemake find the workflow in the
    folder it runs in (a deployed module). --configfile comes last: it takes several files, so a target after
    it would be read as one more config file."""
    cmd = [*SNAKEMAKE]
    if snakefile is not None:
        cmd += ["--snakefile", str(snakefile)]
    cmd += ["--directory", str(workdir), *args]
    if config is not None:
        files = config if isinstance(config, list | tuple) else [config]
        cmd += ["--configfile", *(str(Path(workdir) / f) for f in files)]
    return cmd


def runs_jobs(args: tuple[str, ...] | list[str]) -> bool:
    """Whether Snakemake with these arguments may execute jobs (no dry-run flag among them)."""
    return not any(a in NO_JOB_FLAGS or a.startswith(("--dry-run=", "--dryrun=")) for a in args)


def check_tier(args: tuple[str, ...] | list[str]) -> None:
    """Fail a test of a fast tier that runs Snakemake jobs: its file belongs in tests/dag/."""
    test, tiers = RUNNING["test"], RUNNING["tiers"]
    if test is not None and runs_jobs(args) and not tiers & JOB_TIERS:
        folders = ", ".join(f"tests/{tier}/" for tier in sorted(tiers))
        pytest.fail(
            f"{test} runs Snakemake jobs (no -n) but is in a fast tier ({folders}): move it into tests/dag/ (the "
            "`dag` tier, run by `pytest --all`), or make it a dry run",
            pytrace=False,
        )


def snakemake(
    workdir: Path,
    *args: str,
    config: Path | str | list | tuple | None = "config.yaml",
    snakefile: Path | None = SNAKEFILE,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess:
    """Snakemake run by the suite (snakemake_cmd's command line) in `cwd` (default: `workdir`), its output
    captured as text. A run that executes jobs must come from a test of the dag, slurm, gpu or realdata tier."""
    check_tier(args)
    if cwd is None:
        Path(workdir).mkdir(parents=True, exist_ok=True)  # Snakemake would make it: it is the run's folder
    return subprocess.run(
        snakemake_cmd(workdir, *args, config=config, snakefile=snakefile),
        capture_output=True,
        text=True,
        cwd=cwd or workdir,
        env=env,
        timeout=timeout,
    )


def new_workdir(path: Path, cfg: dict | None = None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.yaml").write_text(yaml.safe_dump(cfg if cfg is not None else small_config()))
    return path


def run_config(workdir: Path) -> dict:
    """The config a run folder was made with (what a dry run beside it changes one key of)."""
    return yaml.safe_load((workdir / "config.yaml").read_text())


def job_logs(workdir: Path) -> str:
    return "\n".join(f"--- {p}\n{p.read_text()[-3000:]}" for p in sorted((workdir / "logs").rglob("*.log")))


def check(proc: subprocess.CompletedProcess, workdir: Path) -> subprocess.CompletedProcess:
    """`proc`, or the test fails with Snakemake's output and the job logs."""
    if proc.returncode != 0:
        pytest.fail(f"workflow failed:\n{(proc.stdout + proc.stderr)[-6000:]}\n{job_logs(workdir)[-12000:]}")
    return proc


# --- the session's long runs, shared by its processes ---------------------------------------------------------
# A session's long runs (the shared DAG, the real-data, GPU smoke and renamed-language DAGs, the SLURM run) start
# once per session, in the process that asks first; with pytest-xdist (`-n 2`) the other workers attach to them
# through the session's folder (SESSION["dir"], set by tests/conftest.py: the controller's, inherited by its
# workers), so a test reads the run in whichever worker it runs. A run's CPU is in no test's count: each
# run's waiter writes its own (into `snakemake.status`), and `--cpu-top` lists the runs apart.
SESSION: dict[str, object] = {"dir": None, "workers": False, "owner": None}  # owner: its first process's pid
WAITER = Path(__file__).resolve().with_name("waiter.py")
REAPED = {"cpu_s": 0.0}  # the CPU of the runs this process has reaped: taken out of the test that reaped them
KILLED = {"returncode": -9, "cpu_s": 0}  # the status of a run killed before its waiter wrote one


class Background:
    """A command (a Snakemake run) started with Popen in its own process group, its output in
    `workdir/snakemake.out`, under tests/support/waiter.py, which writes its exit status and CPU to
    `workdir/snakemake.status` as it ends: started early, waited for by the test that reads it (`finish`), in
    this process or in another of the session (`attach`), and stopped at the end of the session. With
    `forkserver`, the run's jobs are forks of one process that has imported the stack (`LEM_FORKSERVER=1`,
    lem.core.forkserver): the long runs of the session, whose jobs tests/dag/test_reproducibility.py and the
    kill-and-resume chain of tests/dag/test_interruptions.py run again without it, to the same bytes."""

    def __init__(
        self,
        workdir: Path,
        cmd: list[str],
        nice: int = 0,
        env: dict[str, str] | None = None,
        forkserver: bool = False,
    ):
        if forkserver:
            env = {**(os.environ if env is None else env), "LEM_FORKSERVER": "1"}
        self.workdir, self.shared, self.reaped = Path(workdir), False, False
        self.log, self.status = self.workdir / "snakemake.out", self.workdir / "snakemake.status"
        owner = ["--owner", str(SESSION["owner"])] if SESSION.get("owner") else []
        wrapped = [sys.executable, str(WAITER), *owner, str(self.status), *cmd]
        with open(self.log, "w") as out:
            self.proc: subprocess.Popen | None = subprocess.Popen(
                ["nice", "-n", str(nice), *wrapped] if nice else wrapped,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=workdir,
                env=env,
                start_new_session=True,
            )
        self.pid = self.proc.pid

    @classmethod
    def attach(cls, info: dict) -> Background:
        """A run another process of the session started (`describe`'s record of it): waited for by its status."""
        run = cls.__new__(cls)
        run.workdir, run.shared, run.reaped, run.proc, run.pid = (
            Path(info["workdir"]),
            True,
            False,
            None,
            info["pid"],
        )
        run.log, run.status = run.workdir / "snakemake.out", run.workdir / "snakemake.status"
        return run

    def describe(self) -> dict:
        return {"workdir": str(self.workdir), "pid": self.pid}

    def ended(self) -> dict | None:
        """The run's exit status and CPU once it has ended ({"returncode", "cpu_s"}; a run killed before its
        waiter wrote them: KILLED); None while it runs. The process that started the run reaps its waiter here,
        and takes its CPU, now in this process's children's, out of the test's count (REAPED)."""
        if not self.status.exists():
            if self.proc.poll() is None if self.proc is not None else running(self.pid, self.status):
                return None
        status = json.loads(self.status.read_text()) if self.status.exists() else KILLED
        if self.proc is not None and not self.reaped:
            self.proc.wait()
            self.reaped = True
            REAPED["cpu_s"] += status["cpu_s"]
        return status

    def wait(self) -> int:
        """Wait for the run to end; its exit status."""
        while (status := self.ended()) is None:
            time.sleep(0.5)
        return status["returncode"]

    def finish(self) -> tuple[Path, str]:
        """Wait for the run; (its folder, its output), or the test fails with the output and the job logs."""
        returncode = self.wait()
        out = self.log.read_text()
        if returncode != 0:
            pytest.fail(f"workflow exited {returncode}:\n{out[-6000:]}\n{job_logs(self.workdir)[-12000:]}")
        return self.workdir, out

    def stop(self) -> None:
        """Kill the run if it still runs and is this process's alone; a run of the session's other workers too
        (`shared` under pytest-xdist) is left to the controller, which stops what still runs as the session
        ends (stop_session_runs)."""
        if self.proc is None:
            return
        if self.ended() is None and not (self.shared and SESSION["workers"]):
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def running(pid: int, status: Path) -> bool:
    """Whether the waiter `pid` of the run whose status file is `status` still runs (a zombie has ended; a pid
    reused by another process is not it)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return alive(pid) and os.fsencode(str(status)) in cmdline


def runs_folder() -> Path | None:
    return None if SESSION["dir"] is None else Path(SESSION["dir"]) / "runs"


@contextmanager
def session_lock(name: str) -> Iterator[Path | None]:
    """The session's folder of runs, held under the lock `name` (None: no session's folder, no other process)."""
    folder = runs_folder()
    if folder is None:
        yield None
        return
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield folder


def shared_run(name: str, start: Callable[[], Background]) -> Background:
    """The session's run `name`: started by `start()` in the first of the session's processes that asks for it
    (under a lock in the session's folder), attached to in the others."""
    with session_lock(name) as folder:
        if folder is None:
            return start()
        info = folder / f"{name}.json"
        if info.exists():
            return Background.attach(json.loads(info.read_text()))
        run = start()
        run.shared = True
        tmp = info.with_suffix(".tmp")
        tmp.write_text(json.dumps({**run.describe(), "name": name}))
        tmp.replace(info)
        return run


def shared_value(name: str, make: Callable[[], str]) -> str:
    """`make()`'s value, made once per session by the first of its processes that asks (a folder a fixture
    builds, e.g. the tiny reference model of the shared DAG's config: every worker then writes the same config)."""
    with session_lock(name) as folder:
        if folder is None:
            return make()
        done = folder / f"{name}.value"
        if not done.exists():
            done.write_text(make())
        return done.read_text()


def session_runs() -> list[tuple[str, Background]]:
    """Every run of the session so far, by name (attached to: this process waits for none of them)."""
    folder = runs_folder()
    infos = sorted(folder.glob("*.json")) if folder is not None and folder.is_dir() else []
    return [(info.stem, Background.attach(json.loads(info.read_text()))) for info in infos]


def stop_session_runs() -> None:
    """Kill every run of the session that still runs (the controller's last act: no worker reads them any more)."""
    for _, run in session_runs():
        if running(run.pid, run.status):
            try:
                os.killpg(run.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def start_dag(
    workdir: Path,
    cfg: dict | None = None,
    nice: int = 0,
    targets: tuple[str, ...] = (),
    forkserver: bool = False,
) -> Background:
    """The whole shrunken DAG (or its `targets`) from scratch in `workdir`, started in the background (`nice`:
    its CPU priority lowered by that much, so that it takes only the CPU the session leaves idle; `forkserver`:
    `Background`'s)."""
    new_workdir(workdir, cfg)
    cmd = snakemake_cmd(workdir, "--cores", CORES, *targets)
    return Background(workdir, cmd, nice=nice, forkserver=forkserver)


def forkserver_log(workdir: Path, timeout: float = 30) -> str:
    """The fork server's log of a finished run (lem.core.forkserver), once the server has ended: it ends a
    second or so after Snakemake's process, writing what it served."""
    log = workdir / ".snakemake" / "log" / "lem-forkserver.log"
    deadline = time.monotonic() + timeout
    while True:
        text = log.read_text() if log.exists() else ""
        if " served " in text or time.monotonic() > deadline:
            return text
        time.sleep(0.2)


def run_dag(workdir: Path, cfg: dict | None = None) -> Path:
    """The whole shrunken DAG from scratch in `workdir`; the test fails with the logs if it does."""
    return start_dag(workdir, cfg).finish()[0]


def executed_rules(proc: subprocess.CompletedProcess) -> dict[str, int]:
    """Rule -> number of jobs from the job-stats table of a Snakemake run (dry or real); {} when nothing ran."""
    text = proc.stdout + proc.stderr
    if "Job stats:" not in text:
        return {}
    table = text.split("Job stats:", 1)[1].split("\n\n", 1)[0]
    jobs = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)\s*$", table, re.M)}
    return {rule: n for rule, n in jobs.items() if rule not in ("total", "all")}


def metrics_files(workdir: Path) -> list[Path]:
    """Every metrics file of a run: the JSON files under results/ written by `lem.core.files.with_keys` (they end
    with `provenance`), and every file of results/report/."""
    found = []
    for path in sorted((workdir / "results").rglob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if (
            isinstance(data, dict)
            and isinstance(data.get("provenance"), dict)
            and "versions" in data["provenance"]
        ):
            found.append(path)
    return found + sorted(p for p in (workdir / "results" / "report").rglob("*") if p.is_file())


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def digests(workdir: Path) -> dict[str, str]:
    """sha256 of every metrics file and report file, by path relative to `workdir`."""
    return {p.relative_to(workdir).as_posix(): sha256(p) for p in metrics_files(workdir)}


# --- a stand-in conda ---------------------------------------------------------------------------------------------

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


def stand_in_conda(root: Path) -> tuple[dict[str, str], Path]:
    """A stand-in `conda` in `root` (conda itself cannot be installed on these machines, so no environment is
    really solved): (the process environment for Snakemake with it first on PATH, the log it writes: one JSON
    object per line: `conda` (its arguments), `created` (an environment's prefix and its pip lines as pip
    expands them), `composed` (a job's command line as Snakemake composed it), `ran` (a shim of an environment's
    bin/ that ran))."""
    base = root / "fake-conda"
    (base / "bin").mkdir(parents=True)
    lem = Path(sys.executable).parent / "lem"
    conda = base / "bin" / "conda"
    conda.write_text(
        FAKE_CONDA.replace("@PYTHON@", sys.executable).replace("@BASE@", str(base)).replace("@LEM@", str(lem))
    )
    conda.chmod(0o755)
    (base / "bin" / "activate").write_text(ACTIVATE)
    log = root / "conda.log"
    env = {
        **os.environ,
        "PATH": f"{base / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "LEM_FAKE_CONDA_LOG": str(log),
        "LEM_FAKE_PYTHON": sys.executable,
    }
    return env, log


def conda_records(log: Path) -> list[dict]:
    """What the stand-in conda of `stand_in_conda` recorded, in order."""
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


if __name__ == "__main__":
    TEST_CONFIG.parent.mkdir(parents=True, exist_ok=True)
    TEST_CONFIG.write_text(shrunken_config_text(), encoding="utf-8")
    print(f"wrote {TEST_CONFIG.relative_to(REPO)}")
