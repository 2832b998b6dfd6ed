"""The CPU's numeric code paths, pinned from one config key (`resources.cpu_numerics`), and the hardware a job
ran on (every metrics file's `provenance.hardware`).

PyTorch, oneDNN, MKL, OpenBLAS and FAISS each choose SIMD kernels for the CPU they load on (AVX2, AVX-512,
SVE, ...), and kernels of other widths add floats in other orders: the same training job gives other weights
on another CPU. Each library reads a cap from the environment once, when it loads (PyTorch at its first
kernel), so the `lem` command sets them first thing, before anything imports torch (`pin_numerics`):

- `portable` (the default): on x86-64 every library at AVX2 + FMA (`PORTABLE_X86`; Intel since Haswell,
  2013, AMD since Excavator, 2015), on arm64 at NEON without SVE (`PORTABLE_ARM64`), whatever the caller's
  environment says. An x86-64 CPU without AVX2 gets the baseline (`BASELINE_X86`), with a warning: its
  numbers are not those of other x86 machines. AVX2 rather than the baseline for every x86-64 CPU: the
  baseline trained at 0.42-0.63x the throughput of AVX2 (bench/training.py, README), and AVX2 had no
  measurable cost against AVX-512 there.
- `native`: the environment is left as it is (each library takes the best kernels of the CPU, or what the
  caller's environment asks for).

This module imports no numeric library (it runs before them; Python 3.8 too, for `python -m lem`).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import platform
import re
import subprocess
import sys
from collections.abc import MutableMapping
from typing import Any

from lem.core.numerics_probe import job_probe

# Imported inside functions: threadpoolctl (`lem --help` imports this module and needs it not; it is optional:
# scikit-learn's)

log = logging.getLogger("lem.core.numerics")

MODES = ("portable", "native")
MODE_ENV = "LEM_CPU_NUMERICS"  # how the config key reaches a job: common.smk sets it, `lem` reads it
_APPLIED: dict[str, str] = {}  # the mode `pin_numerics` applied to this process, if it ran

# Every library's cap at AVX2 + FMA (x86-64-v3): PyTorch's kernel dispatch, oneDNN's JIT, MKL's conditional
# numerical reproducibility branch (the BLAS of PyTorch's x86 wheels), OpenBLAS's kernels (numpy's, FAISS's)
# and FAISS's SIMD level (FAISS_OPT_LEVEL: the loader of faiss wheels with one module per level;
# FAISS_SIMD_LEVEL: faiss >= 1.12's single library, which picks its level at run time and reads only this).
# MKL applies `MKL_CBWR=AVX2` on Intel CPUs only: on an AMD CPU it runs its AUTO branch (its Zen code path),
# so MKL's GEMMs are not pinned across vendors (`lem plan numerics` records the branch MKL applied).
PORTABLE_X86 = {
    "ATEN_CPU_CAPABILITY": "avx2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "MKL_CBWR": "AVX2",
    "OPENBLAS_CORETYPE": "Haswell",
    "FAISS_OPT_LEVEL": "AVX2",
    "FAISS_SIMD_LEVEL": "AVX2",
}
# An x86-64 CPU without AVX2 + FMA: the levels every x86-64 CPU has (SSE3 for OpenBLAS)
BASELINE_X86 = {
    "ATEN_CPU_CAPABILITY": "default",
    "ONEDNN_MAX_CPU_ISA": "SSE41",
    "MKL_CBWR": "COMPATIBLE",
    "OPENBLAS_CORETYPE": "Prescott",
    "FAISS_OPT_LEVEL": "generic",
    "FAISS_SIMD_LEVEL": "NONE",
}
# arm64: NEON (every AArch64 CPU has it), no SVE kernels; no MKL there
PORTABLE_ARM64 = {
    "ATEN_CPU_CAPABILITY": "default",
    "ONEDNN_MAX_CPU_ISA": "ADVANCED_SIMD",
    "OPENBLAS_CORETYPE": "ARMV8",
    "FAISS_OPT_LEVEL": "generic",
}
PINNED = tuple(PORTABLE_X86)

# the SIMD flags of /proc/cpuinfo that a metrics file records (x86-64, SSE3 named `pni` there; then arm64)
SIMD_FLAGS = frozenset(
    "sse2 sse3 pni ssse3 sse4_1 sse4_2 avx avx2 fma f16c avx_vnni avx512f avx512dq avx512cd avx512bw avx512vl "
    "avx512_vnni avx512_bf16 avx512_fp16 amx_tile amx_bf16 amx_int8 "
    "asimd asimdhp asimddp sve sve2 bf16 i8mm sme".split()
)


def is_x86(machine: str) -> bool:
    return machine.lower() in {"x86_64", "amd64"}


def is_arm64(machine: str) -> bool:
    return machine.lower() in {"aarch64", "arm64"}


@functools.lru_cache  # (not functools.cache: Python 3.8 runs it too)
def _cpuinfo() -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo (Linux), or the same from sysctl (macOS); {} elsewhere."""
    info: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if not line.strip():
                    if info:
                        break
                    continue
                key, _, value = line.partition(":")
                info.setdefault(key.strip(), value.strip())
        return info
    except OSError:
        pass
    if sys.platform == "darwin":
        keys = ("machdep.cpu.brand_string", "machdep.cpu.features", "machdep.cpu.leaf7_features")
        try:
            out = subprocess.run(["sysctl", "-n", *keys], capture_output=True, text=True, timeout=5).stdout
        except (OSError, subprocess.SubprocessError):
            return info
        lines = out.splitlines()
        if lines:
            info["model name"] = lines[0].strip()
            info["flags"] = " ".join(lines[1:]).lower().replace(".", "_")
    return info


def cpu_model() -> str | None:
    info = _cpuinfo()
    return info.get("model name") or info.get("Model") or platform.processor() or None


def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags (x86 `flags`, arm64 `Features`), lower case; empty when unknown."""
    info = _cpuinfo()
    return frozenset((info.get("flags") or info.get("Features") or "").lower().split())


def portable_levels(machine: str | None = None, flags: frozenset[str] | None = None) -> dict[str, str]:
    """The environment of `portable` on this CPU (or `machine` with `flags`): {} where nothing applies."""
    machine = machine or platform.machine()
    if is_x86(machine):
        flags = cpu_flags() if flags is None else flags
        return dict(PORTABLE_X86 if {"avx2", "fma"} <= flags else BASELINE_X86)
    if is_arm64(machine):
        return dict(PORTABLE_ARM64)
    return {}


def numerics_mode(environ: MutableMapping[str, str] | None = None) -> str:
    """`portable` or `native`, from `LEM_CPU_NUMERICS` (portable when unset); anything else is an error."""
    environ = os.environ if environ is None else environ
    mode = environ.get(MODE_ENV) or "portable"
    if mode not in MODES:
        raise ValueError(
            f"{MODE_ENV}={mode!r}: expected one of {', '.join(MODES)} (config resources.cpu_numerics)"
        )
    return mode


def pin_numerics(environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Pin the numeric libraries' code paths in `environ` (the process's by default) as `LEM_CPU_NUMERICS` says:
    `portable` overrides what the caller set, `native` changes nothing. Returns what it set. Only libraries
    loaded afterwards (and child processes) follow it: call it before torch, numpy and faiss are imported."""
    environ = os.environ if environ is None else environ
    mode = numerics_mode(environ)
    if environ is os.environ:
        _APPLIED["mode"] = mode
    if mode == "native":
        return {}
    levels = portable_levels()
    if not levels:
        log.warning(
            "cpu_numerics portable: nothing to pin on %s; numbers follow this CPU", platform.machine()
        )
    elif levels["ATEN_CPU_CAPABILITY"] == "default" and is_x86(platform.machine()):
        log.warning(
            "cpu_numerics portable: this CPU has no AVX2 + FMA; pinned at the x86-64 baseline, whose numbers "
            "differ from those of AVX2 machines (the portable level)"
        )
    environ.update(levels)
    return levels


def export_mode(mode: str) -> None:
    """Make `mode` the one of every `lem` job started from this process (the workflow calls it with
    `resources.cpu_numerics`; a SLURM job reads the config again and does the same)."""
    numerics_mode({MODE_ENV: mode})  # checks it
    os.environ[MODE_ENV] = mode


# --- the hardware a job ran on -------------------------------------------------------------------------


def _torch_part() -> dict[str, Any]:
    """Kernel level, BLAS, threads and GPU as PyTorch sees them; nothing when this process never loaded torch."""
    torch = sys.modules.get("torch")
    if torch is None:
        return {"kernel_level": None, "torch_blas": None, "threads": {}, "gpu": None}
    match = re.search(r"BLAS_INFO=(\w+)", torch.__config__.show())
    part: dict[str, Any] = {
        "kernel_level": torch.backends.cpu.get_cpu_capability(),
        "torch_blas": match.group(1) if match else None,
        "threads": {"torch": torch.get_num_threads(), "torch_interop": torch.get_num_interop_threads()},
        "gpu": None,
    }
    if torch.cuda.is_initialized():  # this process used the GPU
        part["gpu"] = {
            "devices": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())],
            "driver": gpu_driver(),
            "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(),
        }
    return part


def gpu_driver() -> str | None:
    """The NVIDIA driver's version (Linux), or None."""
    try:
        with open("/proc/driver/nvidia/version", encoding="utf-8") as fh:
            match = re.search(r"Kernel Module(?: for [\w-]+)?\s+([\d.]+)", fh.read())
        if match:
            return match.group(1)
    except OSError:
        pass
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return out.splitlines()[0].strip() if out.strip() else None


def _loaded_blas() -> list[dict[str, Any]]:
    """The BLAS and OpenMP libraries loaded in this process (threadpoolctl, when installed): their kind,
    version, kernel architecture and threads (no paths: they name the user's folders)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return []
    keep = ("internal_api", "version", "architecture", "threading_layer", "num_threads")
    libs = [{k: lib[k] for k in keep if k in lib} for lib in threadpool_info()]
    return sorted(libs, key=lambda lib: json.dumps(lib, sort_keys=True))  # not in the order they loaded


def _numpy_blas() -> str | None:
    np = sys.modules.get("numpy")
    if np is None:
        return None
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"{blas.get('name')} {blas.get('version')}"
    except (TypeError, KeyError, AttributeError):  # an older numpy without mode="dicts": unknown
        return None


@functools.lru_cache  # (not functools.cache: Python 3.8 runs it too)
def hardware_provenance() -> dict[str, Any]:
    """What a metrics file records of the machine (once per process, when first written): CPU model, its SIMD
    flags, the `cpu_numerics` mode pinned and the levels in effect, PyTorch's kernel level (None: this process
    never loaded torch; under `portable` it is the pinned level unless torch was loaded before the pin), the
    BLAS libraries and thread counts; the GPU model, driver and CUDA when this process used one; and
    `numerics_probe`, the hashes of the CPU kernels of every numeric library the process loaded
    (`lem.core.numerics_probe`), which name the kernels that compute otherwise on another machine. Fixed on
    one machine and one config, so two runs still write byte-identical metrics."""
    torch_part = _torch_part()
    return {
        "machine": platform.machine(),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "isa": sorted(cpu_flags() & SIMD_FLAGS),
        "cpu_numerics": _APPLIED.get("mode"),  # None: not a `lem` command (nothing pinned by it)
        "pinned": {name: os.environ.get(name) for name in PINNED},
        "kernel_level": torch_part["kernel_level"],
        "blas": {"torch": torch_part["torch_blas"], "numpy": _numpy_blas(), "loaded": _loaded_blas()},
        "threads": {
            **torch_part["threads"],
            **{
                name: os.environ[name]
                for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
                if name in os.environ
            },
        },
        "gpu": torch_part["gpu"],
        "numerics_probe": job_probe(),
    }
