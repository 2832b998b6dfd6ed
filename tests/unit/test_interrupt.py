"""Ctrl-C: a SIGINT sent to Snakemake's process alone reaches its running jobs (lem.core.interrupt), tested on a
stand-in for Snakemake's process (no DAG). Whole runs killed and rerun: tests/dag/test_interruptions.py."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

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
