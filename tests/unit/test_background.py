"""A session's long runs (tests/support/dag.py: Background, run under tests/support/waiter.py; shared_run): the
exit status and CPU written as the command ends, waited for in the process that started the run or in another
(pytest-xdist's workers), and stopped when nothing reads them any more."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import dag


@pytest.fixture
def session(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "session"
    folder.mkdir()
    monkeypatch.setitem(dag.SESSION, "dir", str(folder))
    monkeypatch.setitem(dag.SESSION, "workers", False)
    return folder


def ended() -> list[tuple[str, dict | None]]:
    """Each run of the session with its status (None: still running)."""
    return [(name, run.ended()) for name, run in dag.session_runs()]


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_the_waiter_writes_the_exit_status_and_cpu(tmp_path):
    run = dag.Background(tmp_path, python("sum(range(3_000_000)); print('out'); raise SystemExit(4)"))
    assert run.wait() == 4
    status = json.loads(run.status.read_text())
    assert status["returncode"] == 4 and status["cpu_s"] >= 0 and "out" in run.log.read_text()
    with pytest.raises(pytest.fail.Exception, match="workflow exited 4"):
        run.finish()


def test_a_run_killed_by_a_signal_says_so(tmp_path):
    run = dag.Background(tmp_path, python("import os, signal; os.kill(os.getpid(), signal.SIGTERM)"))
    assert run.wait() == -15  # as subprocess says it


def test_another_process_attaches_to_the_run_and_waits_for_its_status(session, tmp_path):
    started = tmp_path / "started.txt"
    code = f"""
import sys
sys.path.insert(0, {str(dag.REPO / "tests")!r})
from pathlib import Path
from support import dag
dag.SESSION.update(dir={str(session)!r}, workers=True)
def start():
    Path({str(started)!r}).write_text("once")
    folder = Path({str(tmp_path / "run")!r}); folder.mkdir()
    return dag.Background(folder, [sys.executable, "-c", "import time; time.sleep(1.5)"])
run = dag.shared_run("long", start)
print(run.pid)
"""
    proc = subprocess.run(python(code), capture_output=True, text=True, timeout=60, check=True)
    pid = int(proc.stdout.split()[-1])  # its starter has ended: the run goes on
    attached = dag.shared_run("long", lambda: pytest.fail("started twice"))
    assert attached.pid == pid and attached.proc is None and attached.ended() is None
    assert attached.wait() == 0 and started.read_text() == "once"
    assert ended() == [("long", {"returncode": 0, "cpu_s": pytest.approx(0, abs=1)})]


def test_a_run_read_by_other_workers_is_left_to_the_session_which_stops_it(session, tmp_path, monkeypatch):
    monkeypatch.setitem(dag.SESSION, "workers", True)
    run = dag.shared_run("slow", lambda: dag.Background(tmp_path, python("import time; time.sleep(60)")))
    run.stop()  # a worker's end: another may still read it
    time.sleep(0.2)
    assert run.ended() is None
    dag.stop_session_runs()  # the session's end
    assert run.wait() == -9 and ended() == [("slow", {"returncode": -9, "cpu_s": 0})]


def test_a_run_of_one_process_is_killed_by_its_stop(session, tmp_path):
    run = dag.Background(tmp_path, python("import time; time.sleep(60)"))
    run.stop()
    assert run.proc.returncode == -9


def test_a_run_does_not_outlive_its_sessions_first_process(session, tmp_path, monkeypatch):
    """However the session's first process ends (here SIGKILL: no clean-up of its own runs), each run's waiter
    sees it gone and ends the run with its whole process group."""
    owner = subprocess.Popen(python("import time; time.sleep(60)"))
    monkeypatch.setitem(dag.SESSION, "owner", owner.pid)
    grandchild = tmp_path / "grandchild.pid"
    code = f"import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); open({str(grandchild)!r}, 'w').write(str(p.pid)); time.sleep(60)"
    run = dag.Background(tmp_path, python(code))
    deadline = time.monotonic() + 30
    while not grandchild.exists() or not grandchild.read_text():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert run.ended() is None
    owner.kill()
    owner.wait()
    assert run.wait() == -9  # killed, no status written
    pid = int(grandchild.read_text())
    deadline = time.monotonic() + 10
    while not gone(pid):
        assert time.monotonic() < deadline, "the run's own child outlived the session"
        time.sleep(0.1)


def gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True
