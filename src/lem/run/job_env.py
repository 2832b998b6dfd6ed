"""What the jobs of a run inherit from Snakemake's process, set once when the workflow loads
(workflow/rules/common.smk, `set_job_environment`): the CPU kernels' mode and the `lem` command of the rules,
the package that planned them; and, only when asked (`FORWARD_OPT_IN`), a SIGINT sent to Snakemake alone
passed on to them."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from lem.core.interrupt import forward_to_jobs
from lem.core.numerics import export_mode

# =1 in Snakemake's environment: a SIGINT sent to Snakemake's process alone (`kill -INT <pid>`, `timeout -s INT`)
# is passed on to its running jobs. Without it, Snakemake's process gets no handler of ours: Ctrl-C at a terminal
# reaches the jobs anyway (they are in Snakemake's process group), and a SIGINT to Snakemake alone lets the
# running jobs finish, as Snakemake's local executor does.
FORWARD_OPT_IN = "LEM_FORWARD_INTERRUPT"


def set_job_environment(cpu_numerics: str, source_path: str | None = None) -> None:
    """Set in this process (Snakemake's) what every job it starts inherits, locally and inside SLURM jobs:

    - the CPU's kernels pinned (`portable`) or left (`native`): `resources.cpu_numerics`, lem.core.numerics
      (each SLURM job loads the workflow, so sets it again);
    - the `lem` the rules call runs the package that planned them (`jobs_run_this_lem`);
    - with `LEM_FORWARD_INTERRUPT=1` only, a SIGINT sent to Snakemake alone passed on to the running jobs
      (lem.core.interrupt.forward_to_jobs): a training job saves a checkpoint and stops.
    """
    export_mode(cpu_numerics)
    jobs_run_this_lem(source_path)
    if os.environ.get(FORWARD_OPT_IN) == "1":
        forward_to_jobs()


def jobs_run_this_lem(source_path: str | None = None) -> None:
    """Make the rules' `lem` command run the `lem` package this process imported (workflow/rules/source.smk
    checked it is the workflow's own, unless LEM_USE_INSTALLED=1):

    - the bin folder of the Python that runs Snakemake comes first on PATH when it holds a `lem`: that command
      runs this interpreter, so the package it imports (an activated environment's or one met earlier on PATH,
      another clone's, is not called);
    - `source_path`, the folder planning imported `lem` from when this Python has none installed (the
      workflow's own src/, or src/lem/ extracted at a module's commit), comes first on PYTHONPATH: whichever
      `lem` command a job finds imports that code (and a job's own `python -m lem`, torchrun, too).

    No shell prefix: the jobs keep Snakemake's `set -euo pipefail`, and a conda environment's activation still
    comes first (its `lem`, the workflow's own package at its version and commit: lem.run.envs)."""
    if source_path:
        _put_first("PYTHONPATH", str(Path(source_path).absolute()))
    bindir = Path(sys.executable).parent
    if (bindir / "lem").is_file():
        _put_first("PATH", str(bindir))


def _put_first(variable: str, folder: str) -> None:
    """`folder` first in the search path `variable` of this process's environment (once)."""
    rest = [p for p in os.environ.get(variable, "").split(os.pathsep) if p and p != folder]
    os.environ[variable] = os.pathsep.join([folder, *rest])
