"""Ctrl-C: a SIGINT sent to Snakemake's process alone reaches its running jobs when the user asks for it
(LEM_FORWARD_INTERRUPT=1: lem.run.job_env, lem.core.interrupt), tested on a stand-in for Snakemake's process (no
DAG); an interrupt is never a success, even one swallowed where it lands (`stop_on_interrupt`). Whole runs killed and rerun: tests/dag/test_interruptions.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from lem.core import interrupt
from lem.core.stage import Stage, UsageError, Verb, arg

# A stand-in for Snakemake's process: forwarding installed as the workflow does, one job running below a
# shell (as Snakemake runs `shell:`), and Snakemake's own handling of the interrupt (wait for the job).
PARENT = textwrap.dedent(
    """
    import subprocess, sys, time
    from lem.core.interrupt import forward_to_jobs
    forward_to_jobs()
    job = subprocess.Popen(["bash", "-c", "set -e; " + sys.argv[1] + " -c 'import time\\nwhile True: time.sleep(0.05)'; true"])
    print("started", flush=True)
    try:
        while True:
            time.sleep(0.05)
    except KeyboardInterrupt:
        print("terminating", flush=True)
        print("job exit", job.wait(timeout=30), flush=True)
    """
)


def test_sigint_to_the_parent_alone_stops_its_jobs():
    proc = subprocess.Popen([sys.executable, "-c", PARENT, sys.executable], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)  # fmt: skip
    assert proc.stdout.readline().strip() == "started"
    time.sleep(1.0)  # the job's Python is up
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)  # the parent only, not its process group
    out, _ = proc.communicate(timeout=60)
    assert time.monotonic() - sent < 10
    assert "terminating" in out and "job exit" in out and "job exit 0" not in out, out


class SwallowsAnInterrupt:
    """An object whose `__del__` gets the SIGINT, as datasets' `Dataset.__del__` did (issue 51): Python prints
    "Exception ignored ... KeyboardInterrupt" and the code that dropped the object goes on."""

    def __del__(self):
        signal.raise_signal(signal.SIGINT)  # the handler runs inside raise_signal: here, in __del__


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_an_interrupt_swallowed_where_it_lands_still_fails_the_block_and_removes_its_outputs(tmp_path):
    out = tmp_path / "job" / "metrics.json"
    out.parent.mkdir()
    out.write_text("{}")  # a seed done before the interrupt
    (tmp_path / "job" / ".metrics.json.work").mkdir()  # its work folder
    (tmp_path / "job" / ".metrics.json.abc123").mkdir()  # an atomic write's temporary folder
    (tmp_path / "job" / "other.json").write_text("{}")  # not an output of the block: kept
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    went_on = False
    with pytest.raises(KeyboardInterrupt):
        with interrupt.stop_on_interrupt([out, tmp_path / "job" / "never-written.json"]):
            SwallowsAnInterrupt()  # dropped at once: its __del__ swallows the KeyboardInterrupt
            went_on = True
            assert interrupt.interrupted() == signal.SIGINT
    assert went_on  # the KeyboardInterrupt was swallowed: only the flag stopped the block
    assert sorted(p.name for p in (tmp_path / "job").iterdir()) == ["other.json"]
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
    assert interrupt.interrupted() is None  # answered: an in-process caller goes on
    interrupt.check()  # no interrupt now: nothing raised


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_check_stops_the_next_unit_of_work_after_a_swallowed_interrupt(tmp_path):
    done = []
    with pytest.raises(KeyboardInterrupt):
        with interrupt.stop_on_interrupt([tmp_path / "out"]):
            for unit in (1, 2, 3):
                interrupt.check()
                done.append(unit)
                if unit == 1:
                    SwallowsAnInterrupt()
    assert done == [1]


def test_sigterm_fails_the_block_and_an_error_made_of_an_interrupt_is_an_interrupt(tmp_path):
    out = tmp_path / "out.json"
    out.write_text("{}")
    with pytest.raises(KeyboardInterrupt, match="SIGTERM"):
        with interrupt.stop_on_interrupt([out]):
            signal.raise_signal(signal.SIGTERM)
    assert not out.exists()
    out.write_text("{}")
    with pytest.raises(KeyboardInterrupt) as caught:
        with interrupt.stop_on_interrupt([out]):
            try:
                signal.raise_signal(signal.SIGINT)
            except KeyboardInterrupt:
                raise RuntimeError("a library's own error") from None
    assert isinstance(caught.value.__cause__, RuntimeError) and not out.exists()
    out.write_text("{}")
    with pytest.raises(
        RuntimeError, match="no interrupt"
    ):  # a failure of its own: the caller's, outputs kept
        with interrupt.stop_on_interrupt([out]):
            raise RuntimeError("no interrupt")
    assert out.exists()


# --- every `lem` command (lem.core.stage): an interrupt is never a success -----------------------------------------


def fake_stage(run) -> Stage:
    """A stage of one verb, `lem fake go`, declared as every stage is: an input, an output folder, an output
    file and a checkpoint folder (an input of the rerun: never removed)."""
    args = (arg("--input", required=True), arg("--out-dir", required=True), arg("--out-metrics"),
            arg("--checkpoints"))  # fmt: skip
    return Stage("fake", "a fake stage", (Verb("go", "a fake verb", run, args),))


def fake_job(tmp_path):
    """The folders of a fake job: an input file, an output folder that holds another job's file already."""
    (tmp_path / "in.txt").write_text("input")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    (out_dir / "other-job.txt").write_text("kept")  # there before the job: not the job's to remove
    argv = ["go", "--input", str(tmp_path / "in.txt"), "--out-dir", str(out_dir),
            "--out-metrics", str(tmp_path / "metrics.json"), "--checkpoints", str(out_dir / "ckpt")]  # fmt: skip
    return out_dir, argv


def write_outputs(a) -> None:
    out_dir = Path(a.out_dir)
    (out_dir / "ckpt" / "checkpoint-2").mkdir(parents=True)  # a checkpoint to resume from
    (out_dir / "ckpt" / "checkpoint-2" / "trainer_state.json").write_text("{}")
    (out_dir / "part.txt").write_text("made by the job")
    (out_dir / "sub").mkdir()
    (out_dir / "sub" / "x.txt").write_text("made by the job")
    Path(a.out_metrics).write_text("{}")


def left(tmp_path) -> list[str]:
    return sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_verb_that_swallows_the_sigint_still_exits_130_and_removes_only_what_it_made(tmp_path, capsys):
    """Issue 51 for every command: the verb's code (a library's) catches the KeyboardInterrupt and goes on, writes
    its outputs and returns 0; the command exits 130 all the same ("interrupted"), and what the job made of its
    outputs is gone, but not its input, its checkpoints, nor what the output folder held before it."""
    went_on = []

    def run(a):
        write_outputs(a)
        try:
            signal.raise_signal(signal.SIGINT)
        except KeyboardInterrupt:
            pass  # swallowed, as a library's `except BaseException` does
        SwallowsAnInterrupt()  # and once more in a `__del__`
        went_on.append(True)
        return 0

    out_dir, argv = fake_job(tmp_path)
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    assert fake_stage(run).main(argv) == 130
    assert went_on
    assert capsys.readouterr().err.strip().splitlines()[-1] == "lem fake go: interrupted"
    assert left(tmp_path) == ["in.txt", "out/ckpt/checkpoint-2/trainer_state.json", "out/other-job.txt"]
    assert (out_dir / "other-job.txt").read_text() == "kept"
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
    assert interrupt.interrupted() is None  # answered: the next command in this process starts clean


def test_a_verb_interrupted_by_sigterm_exits_130_and_an_error_it_becomes_too(tmp_path, capsys):
    """SIGTERM (a scheduler's cancel, `timeout`) stops a verb as SIGINT does; and a verb that turns the interrupt
    into an error of its own (a declared one, exit 1 otherwise) exits 130 too."""

    def run(a):
        write_outputs(a)
        signal.raise_signal(signal.SIGTERM)
        pytest.fail("SIGTERM did not stop the verb")

    out_dir, argv = fake_job(tmp_path)
    assert fake_stage(run).main(argv) == 130
    assert capsys.readouterr().err.strip().splitlines()[-1] == "lem fake go: interrupted"
    assert left(tmp_path) == ["in.txt", "out/ckpt/checkpoint-2/trainer_state.json", "out/other-job.txt"]

    def declared(a):
        try:
            signal.raise_signal(signal.SIGTERM)
        except KeyboardInterrupt:
            raise UsageError("a library's error") from None

    assert fake_stage(declared).main(argv) == 130


def test_a_verb_that_is_not_interrupted_exits_0_with_its_outputs(tmp_path):
    out_dir, argv = fake_job(tmp_path)
    assert fake_stage(lambda a: write_outputs(a)).main(argv) == 0
    assert left(tmp_path) == ["in.txt", "metrics.json", "out/ckpt/checkpoint-2/trainer_state.json", "out/other-job.txt",
                              "out/part.txt", "out/sub/x.txt"]  # fmt: skip
    assert interrupt.interrupted() is None
    # its own failure is no interrupt: its outputs are the caller's (Snakemake removes a failed job's outputs)
    (tmp_path / "failed").mkdir()
    out_dir, argv = fake_job(tmp_path / "failed")

    def fails(a):
        write_outputs(a)
        raise UsageError("no good")

    assert fake_stage(fails).main(argv) == 1
    assert (out_dir / "part.txt").exists()


def test_an_interrupted_command_removes_a_file_it_rewrote_never_one_it_left_alone(tmp_path):
    """An output file there before the job: rewritten by it (atomically), it is the job's and goes; left alone,
    it stays (the job may have stopped before writing it)."""
    out_dir, argv = fake_job(tmp_path)
    metrics = tmp_path / "metrics.json"
    metrics.write_text('{"old": 1}')

    def run(a):
        signal.raise_signal(signal.SIGINT)

    assert fake_stage(run).main(argv) == 130
    assert metrics.read_text() == '{"old": 1}'

    def rewrites(a):
        tmp = metrics.with_name(".metrics.json.tmp")
        tmp.write_text("{}")
        os.replace(tmp, metrics)
        signal.raise_signal(signal.SIGINT)

    assert fake_stage(rewrites).main(argv) == 130
    assert not metrics.exists() and not list(tmp_path.glob(".metrics.json.*"))


def test_nested_blocks_the_outer_one_fails_even_if_the_inner_ones_interrupt_is_swallowed(tmp_path):
    """A verb's own block (sentiment's) inside the command's: the flag stays set until the outer block ends."""
    with pytest.raises(KeyboardInterrupt):
        with interrupt.stop_on_interrupt([tmp_path / "outer"], only_new=True):
            try:
                with interrupt.stop_on_interrupt([tmp_path / "inner"]):
                    signal.raise_signal(signal.SIGINT)
            except KeyboardInterrupt:
                pass  # swallowed on its way out
            assert interrupt.interrupted() == signal.SIGINT
    assert interrupt.interrupted() is None


# A `lem` command as its own process (the stage machinery of every command), whose verb swallows every
# KeyboardInterrupt; it prints "ready" once its output is written, waits, and goes on when interrupted: returns 0.
SWALLOWING_COMMAND = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from lem.core.stage import Stage, Verb, arg

    def run(a):
        Path(a.out).write_text("{}")
        try:
            print("ready", flush=True)
            time.sleep(30)
        except KeyboardInterrupt:
            print("swallowed", flush=True)
        time.sleep(0.2)  # goes on
        return 0

    stage = Stage("fake", "a fake stage", (Verb("go", "a fake verb", run, (arg("--out", required=True),)),))
    sys.exit(stage.main(sys.argv[1:]))
    """
)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_command_process_that_swallows_the_signal_exits_130(signum, tmp_path):
    out = tmp_path / "metrics.json"
    proc = subprocess.Popen([sys.executable, "-c", SWALLOWING_COMMAND, "go", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stdout.readline().strip() == "ready"
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=60)
    assert "swallowed" in stdout, stdout + stderr
    assert proc.returncode == 130, stdout + stderr
    assert stderr.strip().splitlines()[-1] == "lem fake go: interrupted"
    assert not out.exists()


@pytest.mark.parametrize("opt_in", [None, "1"])
def test_the_workflow_installs_a_handler_in_snakemakes_process_only_when_asked(opt_in):
    """Loading the workflow sets the jobs' environment in Snakemake's process (lem.run.job_env); a SIGINT
    handler of ours only with LEM_FORWARD_INTERRUPT=1 (Ctrl-C at a terminal reaches the jobs without it)."""
    code = ("import signal; from lem.run.job_env import set_job_environment; before = signal.getsignal(signal.SIGINT); "
            "set_job_environment('portable'); print(signal.getsignal(signal.SIGINT) is before)")  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "LEM_FORWARD_INTERRUPT"}
    if opt_in:
        env["LEM_FORWARD_INTERRUPT"] = opt_in
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == ("False" if opt_in else "True"), out.stderr
