"""What the jobs of a run inherit from Snakemake's process, set once when the workflow loads
(workflow/rules/common.smk, `set_job_environment`): the CPU kernels' mode, Ctrl-C passed on to them, and the
`lem` command on PATH."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from lem.core.interrupt import forward_to_jobs
from lem.core.numerics import export_mode


def set_job_environment(cpu_numerics: str) -> None:
    """Set in this process (Snakemake's) what every job it starts inherits, locally and inside SLURM jobs:

    - the CPU's kernels pinned (`portable`) or left (`native`): `resources.cpu_numerics`, lem.core.numerics
      (each SLURM job loads the workflow, so sets it again);
    - Ctrl-C, or a SIGINT sent to Snakemake alone, passed on to the running jobs (lem.core.interrupt): the local
      executor only waits for them, and a training job saves a checkpoint and stops;
    - the `lem` command of the rules found on PATH: without `--software-deployment-method conda` a rule calls
      the `lem` of Snakemake's environment; when Snakemake runs from a virtual environment that is not
      activated (`.venv/bin/snakemake`), that environment's bin folder is added to PATH. No shell prefix: the
      jobs keep Snakemake's `set -euo pipefail`, and a conda environment's activation still comes first.
    """
    export_mode(cpu_numerics)
    forward_to_jobs()
    if shutil.which("lem") is None:
        os.environ.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
