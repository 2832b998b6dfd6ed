"""lem.core.forkserver: a command served by a fork of the server behaves as the process it stands for (exit
code, output, folder, arguments, environment, signals both ways), and a command the server must not serve runs
by itself. A real server in a subprocess, with a `run` of its own (the stack not imported: that is the DAG
tests', tests/dag/test_reproducibility.py: a served job's metrics equal its rerun's without the server)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from lem.core import forkserver

SERVER = textwrap.dedent(
    """
    import os, signal, sys, time
    from lem.core import forkserver

    def run(argv):
        what = argv[0]
        if what == "exit":
            return int(argv[1])
        if what == "echo":
            print("cwd", os.getcwd(), "argv", " ".join(argv[1:]), "X", os.environ.get("X"), flush=True)
            print("to stderr", file=sys.stderr)
            return 0
        if what == "imported":  # whether a module was loaded before this job imported it
            was = argv[1] in sys.modules
            __import__(argv[1])
            print(f"{argv[1]} loaded before: {was}", flush=True)
            return 0
        if what == "raise":
            raise RuntimeError("a bug")
        if what == "wait":  # until a signal: SIGTERM exits 143 by its handler, SIGINT raises KeyboardInterrupt
            signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
            open(argv[1], "w").write(str(os.getpid()))
            time.sleep(60)
            return 0
        return 99

    sys.exit(forkserver.serve_main(sys.argv[1:], run=run))
    """
)

CLIENT = textwrap.dedent(
    """
    import sys
    from lem.core import forkserver

    code = forkserver.served(sys.argv[1:])
    print("BY ITSELF" if code is None else f"SERVED {code}", file=sys.stderr)
    sys.exit(7 if code is None else code)
    """
)


@pytest.fixture
def server(tmp_path: Path):
    sock = Path("/tmp") / f"lem-fs-test-{os.getpid()}-{time.monotonic_ns()}"  # a socket path is short
    log = tmp_path / "server.log"
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(sock), "--log", str(log)], start_new_session=True, cwd=tmp_path
    )
    deadline = time.monotonic() + 30
    while not sock.exists():
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text() if log.exists() else ""
        time.sleep(0.02)
    yield sock, log, proc
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    assert not sock.exists()  # the socket removed as the server ends


def client(sock: Path, *argv: str, cwd: Path, env: dict | None = None, **kw) -> subprocess.Popen:
    environ = {**os.environ, forkserver.SOCKET_ENV: str(sock), **(env or {})}
    return subprocess.Popen(
        [sys.executable, "-c", CLIENT, *argv], cwd=cwd, env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, **kw,
    )  # fmt: skip


def test_exit_code_output_folder_arguments_and_environment_are_the_commands(server, tmp_path: Path):
    sock, log, _ = server
    first = client(sock, "exit", "3", cwd=tmp_path)  # the first command: its environment is the server's
    assert first.wait(timeout=60) == 3, first.stderr.read()
    assert "SERVED 3" in first.stderr.read()
    folder = tmp_path / "a folder"
    folder.mkdir()
    echo = client(sock, "echo", "one", "two", cwd=folder)
    out, err = echo.communicate(timeout=60)
    assert echo.returncode == 0, err
    assert out.strip() == f"cwd {folder} argv one two X None"
    assert "to stderr" in err and "SERVED 0" in err
    bug = client(sock, "raise", cwd=tmp_path)
    _, err = bug.communicate(timeout=60)
    assert bug.returncode == 1 and "RuntimeError: a bug" in err  # a traceback, as a process prints it
    assert "served 0" not in log.read_text()


def test_a_command_in_another_environment_runs_by_itself_saying_why(server, tmp_path: Path):
    sock, log, _ = server
    assert client(sock, "exit", "0", cwd=tmp_path).wait(timeout=60) == 0
    other = client(sock, "exit", "0", cwd=tmp_path, env={"X": "1", "OMP_NUM_THREADS": "4"})
    _, err = other.communicate(timeout=60)
    assert other.returncode == 7 and "BY ITSELF" in err
    line = next(x for x in err.splitlines() if x.startswith("lem:"))
    assert "OMP_NUM_THREADS, X" in line and "runs by itself" in line
    assert (
        "ran by itself: lem exit 0: its environment differs from the server's: OMP_NUM_THREADS, X"
        in log.read_text()
    )


def test_a_template_learns_what_a_job_of_its_kind_imports_and_imports_no_more(server, tmp_path: Path):
    """The first job of a kind runs bare and teaches its template; the next jobs of that kind start with what it
    imported loaded, and a job of another kind starts without it."""
    sock, log, _ = server

    def imported(*argv: str) -> str:
        proc = client(sock, "imported", *argv, cwd=tmp_path)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        return out.strip()

    assert imported("colorsys") == "colorsys loaded before: False"  # bare: as a process of its own
    assert "taught" not in log.read_text()  # a kind of one job costs no import more
    assert imported("colorsys") == "colorsys loaded before: True"  # forked from the template, taught now
    assert "template lem imported colorsys: taught by a job" in log.read_text()
    assert imported("colorsys", "--settings", '{"a": 1}') == "colorsys loaded before: False"  # another kind


def test_messages_queued_back_to_back_are_read_one_by_one_with_their_descriptors(tmp_path: Path):
    """A job's pid and its exit status reach its command back to back when the job ends before the command has
    read the pid (seen on a loaded machine): each is read whole, and nothing of the next is lost."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    forkserver.send_message(ours, {"pid": 12})
    forkserver.send_message(ours, {"code": 0, "padding": "x" * 70_000})  # longer than one read
    assert forkserver.receive_message(theirs) == ({"pid": 12}, [])
    assert forkserver.receive_message(theirs)[0]["code"] == 0
    files = [open(tmp_path / name, "w") for name in ("a", "b")]  # noqa: SIM115 - closed below
    for f, n in zip(files, (1, 2), strict=True):
        forkserver.send_message(ours, {"request": n}, fds=[f.fileno()])
    for n, name in ((1, "a"), (2, "b")):
        message, fds = forkserver.receive_message(theirs, with_fds=1)
        assert message == {"request": n} and len(fds) == 1
        assert os.readlink(f"/proc/self/fd/{fds[0]}") == str(tmp_path / name)
        os.close(fds[0])
    ours.close()
    assert forkserver.receive_message(theirs) == (None, [])
    theirs.close()
    for f in files:
        f.close()


def test_job_kind_is_stage_verb_and_settings_not_files_or_keys():
    a = forkserver.job_kind(["embed", "encode", "--model", "m1", "--out", "x", "--settings", '{"b": 1}'])
    b = forkserver.job_kind(["embed", "encode", "--model", "m2", "--out", "y", "--settings", '{"b": 1}'])
    c = forkserver.job_kind(["embed", "encode", "--model", "m2", "--out", "y", "--settings", '{"b": 2}'])
    d = forkserver.job_kind(["mine", "run", "--settings", '{"b": 1}'])
    assert a == b and len({a, c, d}) == 3


def test_no_server_listening_means_the_command_runs_by_itself(tmp_path: Path):
    proc = client(tmp_path / "none", "exit", "0", cwd=tmp_path)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 7 and "did not answer" in err


def test_refusal_names_what_differs():
    identity = {"executable": "/py", "package": "p1", "env": {"A": "1", "B": "2"}}
    assert forkserver.refusal({"executable": "/py", "package": "p1", "env": {"A": "1", "B": "2", "PWD": "/x"}},
                              identity) is None  # fmt: skip
    assert "another Python" in forkserver.refusal(
        {"executable": "/other", "package": "p1", "env": {}}, identity
    )
    assert "package changed" in forkserver.refusal(
        {"executable": "/py", "package": "p2", "env": {}}, identity
    )
    why = forkserver.refusal({"executable": "/py", "package": "p1", "env": {"A": "1", "C": "3"}}, identity)
    assert why.endswith("B, C")


def test_package_state_changes_with_a_file(tmp_path: Path):
    (tmp_path / "m.py").write_text("x = 1\n")
    before = forkserver.package_state(tmp_path)
    (tmp_path / "m.py").write_text("x = 22\n")
    assert forkserver.package_state(tmp_path) != before


def _started(pidfile: Path) -> int:
    deadline = time.monotonic() + 60
    while not (pidfile.exists() and pidfile.read_text()):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    return int(pidfile.read_text())


def _gone(pid: int, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.02)
    return False


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, -signal.SIGINT)])
def test_a_signal_to_the_command_reaches_its_job_and_the_job_s_end_is_the_command_s(
    server, tmp_path, signum, code
):
    sock, _, _ = server
    pidfile = tmp_path / "pid"
    proc = client(sock, "wait", str(pidfile), cwd=tmp_path)
    job = _started(pidfile)
    assert job != proc.pid
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    # SIGTERM: the job's handler exits 143; SIGINT: an uncaught KeyboardInterrupt, which ends a Python process by
    # SIGINT, and the command with it
    assert proc.returncode == code, err
    assert _gone(job)


@pytest.mark.parametrize("answer", ["served", "refused"])
def test_a_signal_before_the_job_is_known_reaches_it_or_this_process(tmp_path: Path, answer: str):
    """SIGTERM sent to a command after its request and before the job's pid has come back (a loaded machine): kept,
    then sent to the job once its pid is known; when the server refuses the command, raised again in the command,
    which then ends by it as a process of its own would (its handler not yet installed)."""
    sock_path = Path("/tmp") / f"lem-fs-test-{os.getpid()}-{time.monotonic_ns()}"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(sock_path))
    listener.listen(1)
    try:
        got = tmp_path / "got"
        job = subprocess.Popen([sys.executable, "-c", (  # a stand-in job: says which signal it got
            "import signal, sys, time\n"
            f"signal.signal(signal.SIGTERM, lambda n, f: (open({str(got)!r}, 'w').write(str(n)), sys.exit(0)))\n"
            f"open({str(got)!r} + '.ready', 'w').close()\n"
            "time.sleep(60)\n")])  # fmt: skip
        assert _started_file(Path(f"{got}.ready"))
        proc = client(sock_path, "exit", "0", cwd=tmp_path)
        conn, _ = listener.accept()
        request, fds = forkserver.receive_message(conn, with_fds=3)
        for fd in fds:
            os.close(fd)
        assert request["argv"] == ["exit", "0"]
        proc.send_signal(signal.SIGTERM)  # the job's pid not yet sent
        time.sleep(0.5)
        assert proc.poll() is None  # kept, not the default's death
        if answer == "refused":
            forkserver.send_message(conn, {"refused": "a test's refusal"})
            _, err = proc.communicate(timeout=60)
            assert proc.returncode == -signal.SIGTERM and "a test's refusal" in err
            job.kill()
        else:
            forkserver.send_message(conn, {"pid": job.pid})
            assert job.wait(timeout=30) == 0 and got.read_text() == str(int(signal.SIGTERM))
            forkserver.send_message(conn, {"code": 143})
            assert proc.wait(timeout=60) == 143
        conn.close()
    finally:
        listener.close()
        sock_path.unlink()


def _started_file(path: Path) -> bool:
    deadline = time.monotonic() + 30
    while not path.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_a_command_killed_takes_its_job_with_it(server, tmp_path: Path):
    sock, _, _ = server
    pidfile = tmp_path / "pid"
    proc = client(sock, "wait", str(pidfile), cwd=tmp_path)
    job = _started(pidfile)
    proc.kill()
    proc.wait(timeout=30)
    assert _gone(job), "the job outlived its command"


def test_the_server_ends_with_its_parent_once_its_jobs_have(tmp_path: Path):
    sock = Path("/tmp") / f"lem-fs-test-{os.getpid()}-{time.monotonic_ns()}"
    parent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(sock), "--parent", str(parent.pid)], start_new_session=True
    )
    deadline = time.monotonic() + 30
    while not sock.exists():
        assert server.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    pidfile = tmp_path / "pid"
    proc = client(sock, "wait", str(pidfile), cwd=tmp_path)
    job = _started(pidfile)
    parent.kill()
    parent.wait()
    time.sleep(2.5)  # the server looks at its parent every second
    assert server.poll() is None and not sock.exists()  # no new command, the running job kept
    os.kill(job, signal.SIGTERM)
    assert proc.wait(timeout=30) == 143
    assert server.wait(timeout=30) == 0


def test_a_run_s_server_is_stopped_and_waited_for_as_the_run_ends(tmp_path: Path):
    """`start_for_run` in a stand-in for Snakemake's process: the server it starts serves a `lem` command, and
    ends with that process, waited for (its CPU counts in the process's), its socket's folder removed."""
    script = textwrap.dedent(
        """
        import os, resource, subprocess, sys
        from pathlib import Path
        from lem.core import forkserver

        proc = forkserver.start_for_run(log=Path(sys.argv[1]))
        print(os.environ[forkserver.SOCKET_ENV], proc.pid, flush=True)
        out = subprocess.run([sys.executable, "-m", "lem", "--version"], capture_output=True, text=True)
        print(out.stdout.strip(), "|", out.stderr.strip(), flush=True)
        """
    )
    log = tmp_path / "log" / "server.log"
    env = {**os.environ, forkserver.OPT_IN: "1"}
    env.pop(forkserver.SOCKET_ENV, None)
    done = subprocess.run(
        [sys.executable, "-c", script, str(log)], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    sock, pid = first.split()
    version, stderr = second.split("|")
    assert version.startswith("lem ") and not stderr.strip()  # served: no line about running by itself
    assert _gone(int(pid), timeout=1)  # waited for before the process ended
    assert not Path(sock).parent.exists()
    text = log.read_text()
    assert "served 1 commands, 0 ran by themselves" in text, text
