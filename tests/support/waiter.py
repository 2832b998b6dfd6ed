"""A background run's waiter (tests/support/dag.py, Background): runs the command given after the status file's
path, waits for it, and writes its exit status and CPU (user + system of the command and of the processes it
waited for) to that file, atomically; exits as the command did. Its parent need not be the process that reads
the status: with pytest-xdist, another worker of the session waits for the file. With `--owner PID`, the run
does not outlive the test session: when that process (the session's first: pytest-xdist's controller, or the
only one) has ended, however it ended (SIGTERM, SIGKILL, a crash), the waiter kills its command's process group
and its own.

    python tests/support/waiter.py [--owner PID] STATUS COMMAND [ARG ...]
"""

import json
import os
import resource
import signal
import subprocess
import sys

from lem.core.forkserver import alive  # stdlib only: the waiter stays light


def main(argv: list[str]) -> int:
    owner = None
    if argv[:1] == ["--owner"]:
        owner, argv = int(argv[1]), argv[2:]
    status, cmd = argv[0], argv[1:]
    proc = subprocess.Popen(cmd)
    while True:
        try:
            returncode = proc.wait(timeout=1.0)
            break
        except subprocess.TimeoutExpired:
            if owner is not None and not alive(owner):  # the session is gone: so is its run
                os.killpg(os.getpgid(0), signal.SIGKILL)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    tmp = f"{status}.tmp"
    with open(tmp, "w") as out:
        json.dump({"returncode": returncode, "cpu_s": round(kids.ru_utime + kids.ru_stime, 1)}, out)
    os.replace(tmp, status)
    return returncode if returncode >= 0 else 128 - returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
