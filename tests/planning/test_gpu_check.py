"""scripts/gpu-check.sh's arguments: a missing or malformed value is said in one line naming the option, exit 64,
before anything is looked at or written (its refusal on a machine without a GPU: tests/planning/test_gpu_share.py)."""

from __future__ import annotations

import os
import subprocess

import pytest
from support import REPO


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--budget"], "--budget needs a value: --budget SECONDS"),  # was bash's "$2: unbound variable"
        (["--quick", "--budget"], "--budget needs a value: --budget SECONDS"),
        (["--budget", "abc"], "--budget: expected a whole number of seconds > 0, got 'abc'"),
        (["--budget=", "out.jsonl"], "--budget: expected a whole number of seconds > 0, got ''"),
        (["--budget", "--quick"], "--budget: expected a whole number of seconds > 0, got '--quick'"),
        (["--budget", "0"], "--budget: expected a whole number of seconds > 0, got '0'"),
        (["--bogus"], "unknown option --bogus (--quick, --budget SECONDS, --fresh, RESULTS.jsonl)"),
    ],
)
def test_a_bad_option_is_said_in_one_line(tmp_path, args, message):
    env = {**os.environ, "OUT": str(tmp_path), "LEM_GPU_CHECK_STATE": str(tmp_path / "state"),
           "CUDA_VISIBLE_DEVICES": "0"}  # fmt: skip
    proc = subprocess.run(["bash", str(REPO / "scripts" / "gpu-check.sh"), *args], capture_output=True, text=True,
                          env=env, cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 64 and proc.stdout == "", proc.stderr
    assert proc.stderr == f"scripts/gpu-check.sh: {message}\n"
    assert list(tmp_path.iterdir()) == []  # nothing written, no state folder
