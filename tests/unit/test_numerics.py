"""The CPU's numeric code paths pinned from `resources.cpu_numerics` (lem.core.numerics), and the hardware that every
metrics file records. The two-dispatch training test is in tests/dag/test_pretrain_processes.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from lem.core import numerics
from lem.core.files import run_provenance

OUTER = {
    "ATEN_CPU_CAPABILITY": "default",
    "MKL_CBWR": "COMPATIBLE",
    "ONEDNN_MAX_CPU_ISA": "SSE41",
    "PATH": "/x",
}
AVX2_CPU = numerics.is_x86(os.uname().machine) and {"avx2", "fma"} <= numerics.cpu_flags()


def test_native_leaves_the_environment_alone():
    env = {**OUTER, numerics.MODE_ENV: "native"}
    assert numerics.pin_numerics(env) == {}
    assert env == {**OUTER, numerics.MODE_ENV: "native"}
    bare = dict(PATH="/x", LEM_CPU_NUMERICS="native")
    assert numerics.pin_numerics(bare) == {} and bare == {"PATH": "/x", "LEM_CPU_NUMERICS": "native"}


def test_portable_overrides_what_the_caller_set():
    for env in ({**OUTER}, {**OUTER, numerics.MODE_ENV: "portable"}):
        pinned = numerics.pin_numerics(env)
        assert pinned == numerics.portable_levels()
        assert {k: env[k] for k in pinned} == pinned and env["PATH"] == "/x"
    if AVX2_CPU:
        assert env["ATEN_CPU_CAPABILITY"] == "avx2" and env["MKL_CBWR"] == "AVX2"


def test_portable_levels_per_cpu():
    assert numerics.portable_levels("x86_64", frozenset({"sse2", "avx", "avx2", "fma", "avx512f"})) == (
        numerics.PORTABLE_X86
    )
    # an x86-64 CPU without AVX2 gets the baseline, never kernels it cannot run
    assert numerics.portable_levels("x86_64", frozenset({"sse2", "avx"})) == numerics.BASELINE_X86
    assert numerics.portable_levels("AMD64", frozenset()) == numerics.BASELINE_X86
    arm = numerics.portable_levels("aarch64", frozenset({"asimd", "sve"}))
    assert (
        arm == numerics.PORTABLE_ARM64 and arm["ATEN_CPU_CAPABILITY"] == "default" and "MKL_CBWR" not in arm
    )
    assert numerics.portable_levels("ppc64le", frozenset()) == {}
    assert set(numerics.BASELINE_X86) == set(numerics.PORTABLE_X86) == set(numerics.PINNED)


def test_an_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="LEM_CPU_NUMERICS='fast'.*portable, native"):
        numerics.pin_numerics({numerics.MODE_ENV: "fast"})
    with pytest.raises(ValueError, match="portable, native"):
        numerics.export_mode("fast")
    proc = subprocess.run([sys.executable, "-m", "lem.cli", "--help"], capture_output=True, text=True,
                          env={**os.environ, numerics.MODE_ENV: "fast"})  # fmt: skip
    assert proc.returncode == 2 and proc.stderr.startswith("lem: LEM_CPU_NUMERICS='fast'")


KERNEL_LEVEL = """
import sys
from lem.cli import main
main(sys.argv[1:])
import torch
print(torch.backends.cpu.get_cpu_capability())
"""


def kernel_level(**env: str) -> str:
    """PyTorch's kernel level in a process started as a `lem` command, with `env` in its environment."""
    proc = subprocess.run([sys.executable, "-c", KERNEL_LEVEL, "--help"], capture_output=True, text=True,
                          env={**os.environ, **env}, check=True)  # fmt: skip
    return proc.stdout.strip().splitlines()[-1]


@pytest.mark.skipif(not AVX2_CPU, reason="an x86-64 CPU with AVX2 + FMA (the portable level)")
def test_the_lem_command_pins_torch_before_it_loads():
    portable = {numerics.MODE_ENV: "portable"}
    assert kernel_level(**portable, ATEN_CPU_CAPABILITY="default") == "AVX2"
    assert kernel_level(**portable, ATEN_CPU_CAPABILITY="avx512") == "AVX2"
    assert kernel_level(**{numerics.MODE_ENV: "native", "ATEN_CPU_CAPABILITY": "default"}) == "DEFAULT"


def test_metrics_provenance_records_the_hardware():
    import torch

    numerics.hardware_provenance.cache_clear()  # as in a job: torch loaded before the metrics are written
    hw = run_provenance()["hardware"]
    assert hw is numerics.hardware_provenance()  # computed once per process
    assert hw["machine"] == os.uname().machine and hw["cpu_count"] == os.cpu_count()
    assert set(hw["isa"]) <= numerics.SIMD_FLAGS and set(hw["pinned"]) == set(numerics.PINNED)
    assert hw["kernel_level"] == torch.backends.cpu.get_cpu_capability()
    assert hw["blas"]["torch"] and hw["threads"]["torch"] == torch.get_num_threads()
    assert hw["gpu"] is None  # the tests see no GPU (conftest)
    if numerics.is_x86(hw["machine"]):
        assert hw["cpu"] and "sse2" in hw["isa"]
    json.dumps(hw)  # written as JSON


def test_a_job_that_used_a_gpu_records_its_model_and_driver(monkeypatch):
    """No GPU here: torch's answers are those of a process that used one (the branch runs, its fields are
    there; the driver is read from /proc/driver/nvidia/version or nvidia-smi, None when neither is there)."""
    import torch

    driver = numerics.gpu_driver()  # this machine's, read for real
    assert driver is None or driver[0].isdigit()
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i: "NVIDIA H100 80GB HBM3")
    monkeypatch.setattr(torch.backends.cudnn, "version", lambda: 91000)
    monkeypatch.setattr(numerics, "gpu_driver", lambda: "570.86.15")
    numerics.hardware_provenance.cache_clear()
    try:
        gpu = numerics.hardware_provenance()["gpu"]
    finally:
        numerics.hardware_provenance.cache_clear()
    assert gpu == {"devices": ["NVIDIA H100 80GB HBM3"], "driver": "570.86.15", "cuda": torch.version.cuda,
                   "cudnn": 91000}  # fmt: skip


def test_nothing_loads_torch_or_numpy_before_the_pin():
    """`lem` pins in `main`, after its module imports: those must not load a numeric library (which would
    choose its kernels before the pin, silently)."""
    probe = "import sys, lem.cli; print(sorted(m for m in ('torch', 'numpy', 'faiss') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
