"""Ctrl-C: a SIGINT sent to Snakemake's process alone reaches its running jobs (lem.core.interrupt), tested on a
stand-in for Snakemake's process (no DAG); an interrupt is never a success, even one swallowed where it lands
(`stop_on_interrupt`). Whole runs killed and rerun: tests/dag/test_interruptions.py."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

import pytest

from lem.core import interrupt

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
