"""A fork server for a local run: every `lem` job of the run a fork of a process that has imported, already,
what a job of its kind imports (torch, transformers, datasets, the stage), so that most jobs start without
importing it again.

Opt-in, for a run on one machine (`LEM_FORKSERVER=1 snakemake --cores all ...`): on a CPU, a model job's start
is mostly imports (`from transformers import Trainer`: 10 CPU-s on a 2-core AMD EPYC, of an NMT run's 13), so a
DAG of many small jobs (the embedded default, the test suite's) spends much of its CPU starting. On a cluster
each job is a process of its own, as without it.

- The workflow starts the server when the run starts (`start_for_run`, workflow/rules/common.smk's `onstart`,
  never in a dry run), after it has set what its jobs inherit (lem.run.job_env). Snakemake's process stops it
  and waits for it as it ends (`stop`: its CPU and its jobs' count in Snakemake's); killed, it ends once
  Snakemake's process has and its last job with it.
- A job's `lem` command (`lem.cli.main`, `served`) hands its arguments, working folder, environment and its
  standard input, output and error (the descriptors themselves) to the server. The server hands it to the
  template of its kind (`job_kind`: stage, verb and settings; `Template`), which forks; the fork runs the
  command as the `lem` process would have (`lem.cli.main`), and its exit status becomes the command's: the same
  code, or death by the same signal.
- A template is taught by its kind's first job: that job runs bare (a fork of the bare server, importing what
  it needs as a process of its own does) and writes the modules it imported; when the next job of the kind
  comes, the template imports them, in their order, and forks it and every later one from itself. So a job
  has loaded what the same command run by itself loads, no more: its metrics files, whose provenance lists
  the numeric libraries the process loaded (lem.core.numerics), are the same bytes.
- Only a job that runs the same code the same way is served (`refusal`): its environment equal to the first
  command's (Snakemake gives each job its thread count and temporary folder; the shell's own variables aside:
  `SHELL_OWN`), the same interpreter, and every file of the `lem` package unchanged since the server started
  (sizes and modification times). Any other command, or a server that does not answer, runs by itself, as
  without the server, after one line on its standard error.
- Signals sent to the command (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2: Snakemake's, a terminal's,
  `kill`) are passed to the job; a command killed (SIGKILL) takes its job with it: the job watches the
  connection and kills itself when the command is gone. The server and its templates ignore SIGINT: a Ctrl-C
  stops the jobs through their commands.

tests/dag/test_reproducibility.py and the kill-and-resume chain of tests/dag/test_interruptions.py run the
shared DAG's jobs, served there, again without the server: the same bytes. tests/unit/test_forkserver.py: exit
codes, output, signals, refusals, templates.
"""

from __future__ import annotations

import array
import atexit
import hashlib
import importlib
import json
import logging
import os
import resource
import selectors
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

OPT_IN = "LEM_FORKSERVER"  # =1 in Snakemake's environment: the run starts a server (`start_for_run`)
SOCKET_ENV = "LEM_FORKSERVER_SOCKET"  # where the jobs find it (set by `start_for_run`, inherited by the jobs)
SHELL_OWN = frozenset({"PWD", "OLDPWD", "SHLVL", "_"})  # variables a shell sets for itself
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
_HEADER = struct.Struct("!I")
_IN_JOB = False  # True in a job the server forked: its `lem` runs, it does not ask a server

log = logging.getLogger(__name__)


def package_state(package: Path | None = None) -> str:
    """The sha256 of the `lem` package's files as they are on disk (names, sizes, modification times): any file
    edited, added or removed since gives another value."""
    package = Path(__file__).resolve().parents[1] if package is None else package
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            st = path.stat()
            digest.update(
                f"{path.relative_to(package).as_posix()}\0{st.st_size}\0{st.st_mtime_ns}\n".encode()
            )
    return digest.hexdigest()


def comparable(environ: dict[str, str]) -> dict[str, str]:
    """The environment as it is compared with the server's: the shell's own variables left out."""
    return {k: v for k, v in environ.items() if k not in SHELL_OWN}


def refusal(request: dict, identity: dict) -> str | None:
    """Why a request must run by itself (None: it may be served): another interpreter, another package state,
    or an environment that differs from the server's (the variables named)."""
    if request.get("executable") != identity["executable"]:
        return f"another Python ({request.get('executable')}, the server runs {identity['executable']})"
    if request.get("package") != identity["package"]:
        return "the lem package changed since the server started"
    theirs, ours = comparable(request.get("env") or {}), identity["env"]
    differ = sorted(k for k in set(theirs) | set(ours) if theirs.get(k) != ours.get(k))
    if differ:
        shown = ", ".join(differ[:5]) + (f" and {len(differ) - 5} more" if len(differ) > 5 else "")
        return f"its environment differs from the server's: {shown}"
    return None


# ---------------------------------------------------------------------------------------------------- messages
def send_message(sock: socket.socket, message: dict, fds: Sequence[int] = ()) -> None:
    data = json.dumps(message).encode()
    payload = _HEADER.pack(len(data)) + data
    if fds:
        sock.sendmsg([payload], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
    else:
        sock.sendall(payload)


def receive_message(sock: socket.socket, with_fds: int = 0) -> tuple[dict | None, list[int]]:
    """One message (None at the end of the connection) and the descriptors that came with it. Never reads past
    its end: the next message may be queued behind it already (a job's pid and its exit status, when the job
    ends before its command has read the pid)."""
    buf, fds = b"", []
    need = _HEADER.size
    while len(buf) < need:
        if with_fds and not fds:
            space = socket.CMSG_SPACE(with_fds * array.array("i").itemsize)
            chunk, ancdata, _, _ = sock.recvmsg(need - len(buf), space)
            for level, kind, data in ancdata:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    got = array.array("i")
                    got.frombytes(data[: len(data) - (len(data) % got.itemsize)])
                    fds += list(got)
        else:
            chunk = sock.recv(need - len(buf))
        if not chunk:
            for fd in fds:
                os.close(fd)
            return None, []
        buf += chunk
        if len(buf) >= _HEADER.size:
            need = _HEADER.size + _HEADER.unpack(buf[: _HEADER.size])[0]
    return json.loads(buf[_HEADER.size : need]), fds


# ------------------------------------------------------------------------------------------------------ client
def served(argv: Sequence[str]) -> int | None:
    """`lem argv` run by the server this process's environment names (`SOCKET_ENV`): its exit code, or None
    when it must run here (no server named, or in a job of one; the server refused or did not answer: one line
    on standard error says why). A job killed by a signal kills this process with the same signal."""
    path = os.environ.get(SOCKET_ENV)
    if not path or _IN_JOB:
        return None
    # A signal sent to this process is its job's: forwarded from the request on, and one that comes before the
    # job's pid is known is kept and sent on with it (or, when the command runs here, raised here again)
    job: dict[str, int | None] = {"pid": None}
    pending: list[int] = []

    def forward(signum, frame):  # noqa: ARG001 - a signal handler's signature
        if job["pid"] is None:
            pending.append(signum)
            return
        try:
            os.kill(job["pid"], signum)
        except ProcessLookupError:
            pass

    previous = {signum: signal.signal(signum, forward) for signum in FORWARDED}

    def by_itself(why: str) -> None:
        print(why, file=sys.stderr)
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for signum in pending:
            os.kill(os.getpid(), signum)

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
        request = {
            "argv": list(argv),
            "argv0": sys.argv[0] if sys.argv else "lem",
            "cwd": os.getcwd(),
            "env": dict(os.environ),
            "executable": sys.executable,
            "package": package_state(),
        }
        send_message(sock, request, fds=(0, 1, 2))
        reply, _ = receive_message(sock)
    except OSError as err:
        sock.close()
        by_itself(f"lem: the fork server at {path} did not answer ({err}): the command runs by itself")
        return None
    if reply is None or "refused" in reply:
        sock.close()
        why = "it ended the connection" if reply is None else reply["refused"]
        by_itself(f"lem: the fork server did not take the command ({why}): it runs by itself")
        return None
    pid = job["pid"] = int(reply["pid"])
    for signum in pending:
        forward(signum, None)
    status, _ = receive_message(sock)
    sock.close()
    if status is None:
        print(f"lem: the fork server ended while the job ran (pid {pid}): failed", file=sys.stderr)
        return 1
    if status.get("signal"):
        signum = int(status["signal"])
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return 128 + signum  # a signal that does not end a process by default
    return int(status["code"])


# ------------------------------------------------------------------------------------------------------ server
def job_kind(argv: Sequence[str]) -> str:
    """What a command's imports depend on: its stage and verb and its `--settings` (a backend named there loads its
    own packages); not its files, seeds or keys."""
    words = list(argv[:2])
    for i, arg in enumerate(argv):
        if arg == "--settings" and i + 1 < len(argv):
            words.append(argv[i + 1])
        elif arg.startswith("--settings="):
            words.append(arg.split("=", 1)[1])
    return "\0".join(words)


def import_all(modules: Sequence[str]) -> dict[str, str]:
    """Import `modules` in their order (one that cannot be imported by name is left out: its package's import
    made it); what the imports set in the environment (torch: KMP_INIT_AT_FORK, ...)."""
    before = dict(os.environ)
    for name in modules:
        if name in sys.modules or name in ("__main__", "__mp_main__"):
            continue
        try:
            importlib.import_module(name)
        except BaseException:  # noqa: BLE001 - whatever a module raises when imported out of its package's order
            pass
    return {k: v for k, v in os.environ.items() if before.get(k) != v}


class Loop:
    """What the server and its templates share: jobs forked, their ends reported to their commands, the log."""

    def __init__(self, run: Callable[[list[str]], int], log_file) -> None:
        self.run, self.log = run, log_file
        self.jobs: dict[int, tuple[socket.socket, dict]] = {}
        self.wake_r, wake_w = os.pipe()
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.wake_r, selectors.EVENT_READ)

    def say(self, text: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {text}", file=self.log, flush=True)

    def ready(self) -> list:
        """What became readable within a second; a signal (SIGCHLD: a job ended) wakes the wait early."""
        sources = []
        for key, _ in self.selector.select(timeout=1.0):
            if key.fileobj == self.wake_r:
                os.read(self.wake_r, 512)
            else:
                sources.append(key.fileobj)
        return sources

    def fork_job(
        self, conn: socket.socket, fds: list[int], request: dict, imports_set: dict[str, str]
    ) -> int:
        pid = os.fork()
        if pid == 0:
            run_job(conn, fds, request, self.run, imports_set)  # never returns
        for fd in fds:
            os.close(fd)
        self.jobs[pid] = (conn, request)
        return pid

    def reap(self) -> list[tuple[int, dict, dict]]:
        """The jobs that ended: (pid, request, status); each command told how its job ended."""
        ended = []
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return ended
            if pid == 0:
                return ended
            conn, request = self.jobs.pop(pid, (None, None))
            message = (
                {"signal": os.WTERMSIG(status)}
                if os.WIFSIGNALED(status)
                else {"code": os.waitstatus_to_exitcode(status)}
            )
            if conn is not None:
                try:
                    send_message(conn, message)
                except OSError:
                    pass  # the command is gone
                conn.close()
            ended.append((pid, request, message))


class Template(Loop):
    """A fork of the bare server for one kind of job (`job_kind`). Its first jobs run bare, importing what they
    need as a process of their own does, and write the names of the modules they imported; the first to end
    well teaches the template: when the next job of its kind comes (a kind with one job costs no import more),
    the template imports those modules in their order and forks it, and every later one, from itself. A job so
    forked has loaded what the same command run by itself loads, no more (the numeric libraries a metrics
    file's provenance lists: lem.core.numerics), and starts without importing it."""

    def __init__(self, channel: socket.socket, kind: str, run, log_file, folder: str) -> None:
        super().__init__(run, log_file)
        self.channel, self.kind, self.folder = channel, kind, folder
        self.name = "lem " + " ".join(kind.split("\0")[:2])
        self.modules: list[str] | None = None  # what the first job that ended well imported
        self.imports_set: dict[str, str] | None = None  # None: not taught yet
        self.served = self.bare = 0

    def main(self) -> None:
        self.selector.register(self.channel, selectors.EVENT_READ)
        open_ = True
        while open_ or self.jobs:
            for source in self.ready():
                if source is self.channel and open_:
                    request, fds = receive_message(self.channel, with_fds=4)
                    if request is None:
                        open_ = False  # the server has closed: the running jobs end, no other comes
                        self.selector.unregister(self.channel)
                        continue
                    conn = socket.socket(fileno=fds[0])
                    if self.imports_set is None and self.modules is not None:
                        started = time.perf_counter()
                        self.imports_set = import_all(self.modules)
                        self.say(
                            f"template {self.name}: taught by a job, {len(sys.modules)} modules imported in "
                            f"{time.perf_counter() - started:.1f} s"
                        )
                    if self.imports_set is None:
                        request["report"] = os.path.join(
                            self.folder, f"lem-fs-modules-{os.getpid()}-{self.bare}.json"
                        )
                        self.bare += 1
                    else:
                        self.served += 1
                    self.fork_job(conn, fds[1:], request, self.imports_set or {})
            for _, request, status in self.reap():
                report = (request or {}).get("report")
                if report and self.modules is None and status.get("code") == 0 and os.path.exists(report):
                    with open(report, encoding="utf-8") as fh:
                        self.modules = json.load(fh)
                if report and os.path.exists(report):
                    os.unlink(report)
        own, jobs = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        self.say(
            f"template {self.name}: {self.bare} jobs run bare, {self.served} forked taught; "
            f"CPU: its own {own.ru_utime + own.ru_stime:.1f} s, its jobs {jobs.ru_utime + jobs.ru_stime:.1f} s"
        )


class Server(Loop):
    """The server: accepts a command, checks it may be served, hands it to the template of its kind."""

    IDLE_S = 180.0  # a template with no job for this long ends (its kind is likely done: the run moved on)
    # at most this many at once (one that imported torch holds about 300 MB of its own): the least recently
    # used ends first
    MAX_TEMPLATES = 24

    def __init__(
        self,
        path: str,
        run: Callable[[list[str]], int],
        parent: int | None = None,
        log_file=None,
    ):
        super().__init__(run, log_file or sys.stderr)
        self.path, self.parent = path, parent
        self.folder = os.path.dirname(os.path.abspath(path))
        self.identity: dict | None = None
        self.templates: dict[str, list] = {}  # kind -> [pid, channel, last used]
        self.served = self.refused = 0
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(128)  # commands that arrive early wait here

    def adopt(self, request: dict) -> None:
        """The first command's environment (Snakemake gives each job its own: threads, temporary folder; `lem`
        has pinned its numerics in it) becomes the server's: later commands are served when theirs is this one."""
        os.environ.clear()
        os.environ.update(comparable(request["env"]))
        self.identity = {
            "executable": sys.executable,
            "package": package_state(),
            "env": comparable(os.environ),
        }
        self.say(
            f"serving commands in the environment of the first (lem {' '.join(request['argv'][:2])}; "
            f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')})"
        )

    def serve(self) -> None:
        stopping: list[int] = []
        signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
        self.selector.register(self.listener, selectors.EVENT_READ)
        accepting = True
        while accepting or self.templates:
            for source in self.ready():
                if source is self.listener and accepting:
                    self.accept()
            for pid, _, _ in self.reap():
                for kind, (tpid, channel, _) in list(self.templates.items()):
                    if tpid == pid:
                        channel.close()
                        del self.templates[kind]
            now = time.monotonic()
            for entry in list(self.templates.values()):
                if entry[1].fileno() >= 0 and now - entry[2] > self.IDLE_S:
                    entry[1].close()  # it ends once its running jobs have
            if accepting and (stopping or (self.parent is not None and not alive(self.parent))):
                accepting = (
                    False  # Snakemake has ended (or asked): no new job; the running ones end as theirs
                )
                self.selector.unregister(self.listener)
                self.listener.close()
                os.unlink(self.path)
                for entry in self.templates.values():
                    if entry[1].fileno() >= 0:
                        entry[1].close()
                self.say(f"no new job (the run has ended); {len(self.templates)} templates finishing")
        own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        self.say(
            f"served {self.served} commands, {self.refused} ran by themselves; CPU: the server "
            f"{own.ru_utime + own.ru_stime:.1f} s, its templates and their jobs {kids.ru_utime + kids.ru_stime:.1f} s"
        )

    def accept(self) -> None:
        conn, _ = self.listener.accept()
        conn.settimeout(30)
        try:
            request, fds = receive_message(conn, with_fds=3)
        except (OSError, ValueError) as err:
            self.say(f"a command's request could not be read: {err}")
            conn.close()
            return
        if request is None or len(fds) != 3:
            for fd in fds:
                os.close(fd)
            conn.close()
            return
        if self.identity is None and request.get("executable") == sys.executable:
            self.adopt(request)
        why = refusal(request, self.identity or {"executable": sys.executable, "package": None, "env": {}})
        if why:
            self.refused += 1
            self.say(f"ran by itself: lem {' '.join(request['argv'][:2])}: {why}")
            try:
                send_message(conn, {"refused": why})
            except OSError:
                pass
            for fd in fds:
                os.close(fd)
            conn.close()
            return
        kind = job_kind(request["argv"])
        entry = self.templates.get(kind)
        if entry is None or entry[1].fileno() < 0:
            entry = self.templates[kind] = self.spawn(kind, not_theirs=[conn.fileno(), *fds])
        entry[2] = time.monotonic()
        try:
            send_message(entry[1], request, fds=[conn.fileno(), *fds])
            self.served += 1
        except OSError as err:
            self.refused += 1
            self.say(
                f"ran by itself: lem {' '.join(request['argv'][:2])}: its template did not answer ({err})"
            )
            try:
                send_message(conn, {"refused": f"its template did not answer ({err})"})
            except OSError:
                pass
        for fd in fds:
            os.close(fd)
        conn.close()

    def spawn(self, kind: str, not_theirs: Sequence[int] = ()) -> list:
        """A template for `kind` (`Template`), forked from this bare process (`not_theirs`: descriptors it must
        not keep, the request's in hand: a command's output stays open while a process holds it); the least
        recently used one ends first when there are `MAX_TEMPLATES`."""
        live = [e for e in self.templates.values() if e[1].fileno() >= 0]
        if len(live) >= self.MAX_TEMPLATES:
            min(live, key=lambda e: e[2])[1].close()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                self.listener.close()
                ours.close()
                for fd in not_theirs:
                    os.close(fd)
                for entry in self.templates.values():
                    if entry[1].fileno() >= 0:
                        entry[1].close()
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                Template(theirs, kind, self.run, self.log, self.folder).main()
                code = 0
            finally:
                os._exit(code)
        theirs.close()
        return [pid, ours, time.monotonic()]


def alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie, ended but not yet waited for, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def run_job(
    conn: socket.socket,
    fds: list[int],
    request: dict,
    run: Callable[[list[str]], int],
    imports_set: dict[str, str],
) -> None:
    """In the forked job: become the command (its descriptors, folder, environment, arguments, signals), run
    it (`run`: `lem.cli.main`) and exit as a `lem` process would. Never returns."""
    global _IN_JOB
    _IN_JOB = True
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        for signum in (
            signal.SIGTERM,
            signal.SIGCHLD,
            signal.SIGHUP,
            signal.SIGQUIT,
            signal.SIGUSR1,
            signal.SIGUSR2,
        ):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.setpgid(0, 0)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the process's own descriptors, as Python opens them
        sys.stdout = open(1, "w", closefd=False, buffering=1 if os.isatty(1) else -1)  # noqa: SIM115
        sys.stderr = open(2, "w", closefd=False, buffering=1)  # noqa: SIM115
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        os.environ.update(imports_set)
        sys.argv = [request["argv0"], *request["argv"]]
        send_message(conn, {"pid": os.getpid()})
        threading.Thread(target=_die_with_command, args=(conn,), daemon=True).start()
        result = run(request["argv"])
        code = 0 if result is None else int(result)
        if request.get("report"):  # a bare job teaches its template what a job of its kind imports
            with open(request["report"], "w", encoding="utf-8") as fh:
                json.dump(list(sys.modules), fh)
    except SystemExit as stop:
        if stop.code is None:
            code = 0
        elif isinstance(stop.code, int):
            code = stop.code
        else:
            print(stop.code, file=sys.stderr)
            code = 1
    except KeyboardInterrupt:
        traceback.print_exc()
        _finish()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)  # as Python ends on an uncaught KeyboardInterrupt
    except BaseException:
        traceback.print_exc()
        code = 1
    _finish()
    os._exit(code & 0xFF)


def _finish() -> None:
    """What an interpreter does at its end: the exit functions, logging's handlers, the streams flushed."""
    try:
        atexit._run_exitfuncs()
        logging.shutdown()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass


def _die_with_command(conn: socket.socket) -> None:
    """In a job: wait for the end of the command's connection (the command never writes after its request);
    the command gone, the job ends too, as a process killed with its command."""
    conn.settimeout(None)
    while True:
        try:
            if not conn.recv(1):
                break
        except InterruptedError:
            continue
        except OSError:
            break
    os.kill(os.getpid(), signal.SIGKILL)


def serve_main(argv: Sequence[str], run: Callable[[list[str]], int]) -> int:
    """`lem --fork-server SOCKET [--parent PID] [--log FILE]` (lem.cli): serve `run` (`lem.cli.main`) until the
    parent process ends (or SIGTERM), then until the last job has."""
    usage = (
        "usage: lem --fork-server SOCKET [--parent PID] [--log FILE] (started by a run: lem.core.forkserver)"
    )
    rest, options, positional = list(argv), {"--parent": None, "--log": None}, []
    while rest:
        word = rest.pop(0)
        if word in options and rest:
            options[word] = rest.pop(0)
        elif word.startswith("-"):
            print(f"{usage}\nlem --fork-server: {word!r} is not an option, or has no value", file=sys.stderr)
            return 2
        else:
            positional.append(word)
    parent = options["--parent"]
    if len(positional) != 1 or (parent is not None and not parent.isdigit()):
        print(
            f"{usage}\nlem --fork-server: expected one socket path and a process id after --parent",
            file=sys.stderr,
        )
        return 2
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C reaches the jobs through their commands
    log = options["--log"]
    log_file = open(log, "a", buffering=1) if log else None  # noqa: SIM115 - open while it serves
    server = Server(positional[0], run, parent=None if parent is None else int(parent), log_file=log_file)
    try:
        server.serve()
    finally:
        if os.path.exists(positional[0]):
            os.unlink(positional[0])
        for leftover in Path(server.folder).glob("lem-fs-modules-*.json"):
            leftover.unlink()
        try:
            os.rmdir(server.folder)  # start_for_run's folder, when it made it
        except OSError:
            pass
    return 0


def start_for_run(log: Path | None = None) -> subprocess.Popen | None:
    """Start the run's server when Snakemake's environment asks (`LEM_FORKSERVER=1`), from Snakemake's process
    once it has set its jobs' environment; None when not asked. The server listens before it imports, so the
    first jobs wait for it rather than run without it."""
    if os.environ.get(OPT_IN) != "1":
        return None
    folder = tempfile.mkdtemp(prefix="lem-fs-")
    path = os.path.join(folder, "socket")
    os.environ[SOCKET_ENV] = path  # before the server starts: its environment is the jobs'
    cmd = [sys.executable, "-m", "lem", "--fork-server", path, "--parent", str(os.getpid())]
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        cmd += ["--log", str(log)]
    out = open(log, "a") if log is not None else subprocess.DEVNULL  # noqa: SIM115 - the child's, closed here
    proc = subprocess.Popen(
        cmd, start_new_session=True, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT
    )
    if log is not None:
        out.close()
    deadline = time.monotonic() + 60
    while not os.path.exists(path):  # bound: the jobs may connect from now on
        if proc.poll() is not None or time.monotonic() > deadline:
            del os.environ[SOCKET_ENV]
            print(
                f"lem: the fork server did not start (exit {proc.poll()}): every job runs by itself",
                file=sys.stderr,
            )
            return None
        time.sleep(0.05)
    atexit.register(stop, proc)
    return proc


def stop(proc: subprocess.Popen, timeout: float = 120) -> None:
    """At the end of Snakemake's process (`start_for_run` registers it): the server asked to end (SIGTERM: no new
    job, its running jobs finish) and waited for, so that its CPU, its templates' and their jobs' counts in
    Snakemake's (`time snakemake ...`). A server still busy after `timeout` seconds is left to end by itself
    (it ends once Snakemake's process has and its last job with it)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
