"""A background run's waiter (tests/support/dag.py, Background): runs the command given after the status file's
path, waits for it, and writes its exit status and CPU (user + system of the command and of the processes it
waited for) to that file, atomically; exits as the command did. Its parent need not be the process that reads
the status: with pytest-xdist, another worker of the session waits for the file.

    python tests/support/waiter.py STATUS COMMAND [ARG ...]
"""

import json
import os
import resource
import subprocess
import sys


def main(argv: list[str]) -> int:
    status, cmd = argv[0], argv[1:]
    returncode = subprocess.call(cmd)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    tmp = f"{status}.tmp"
    with open(tmp, "w") as out:
        json.dump({"returncode": returncode, "cpu_s": round(kids.ru_utime + kids.ru_stime, 1)}, out)
    os.replace(tmp, status)
    return returncode if returncode >= 0 else 128 - returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
