"""A fingerprint of the numeric kernels a process runs (`lem.core.numerics`): each kernel family that the
pipeline's training, embedding and mining use, run on fixed inputs under the process's pinned settings, and
reduced to a short sha256 of its output's bytes.

A kernel whose hash differs between two machines computes otherwise there (another SIMD width, another BLAS
code path or blocking, another number of threads): proof that numbers going through it may differ. Hashes that
agree show the kernels agree at these shapes; another shape may take another path, so agreement is evidence,
not proof. The inputs are dyadic numbers made by integer arithmetic (exact on every CPU), so a differing hash is
the kernel's, never its inputs'. Sizes are those at which the libraries take their blocked and vectorised paths
(matrices of 64-256, a 4096-long inner dimension, reductions over 2**18 floats, split between threads).

- `torch`: MKL's SGEMM (`mm`, `mm_long_k`, `addmm` the linear layer, `linear_backward`) and SGEMM_BATCH
  (`bmm`), oneDNN's JIT (`gelu`: PyTorch's CPU GELU is oneDNN's eltwise kernel), ATen's vectorised kernels
  (`sdpa` forward and backward, `softmax`, `log_softmax`, `layer_norm`, `exp`, `tanh`, `erf`, `log`, `sum`,
  `mean_dim`, `embedding_backward`, `cross_entropy`, `adamw`, `normalize`);
- `numpy`: OpenBLAS (`dot`, `matmul` the mining engine's `x @ y.T`, `matmul_long_k`) and numpy's own SIMD
  loops (`sum`, `mean_rows`);
- `faiss`: `IndexFlatIP` search (faiss's own SIMD inner products at the SIMD level faiss chose: faiss 1.15
  hands them to BLAS only from `faiss.cvar.distance_compute_blas_threshold`, 128,000, queries on).

What it does not see: the GPU's kernels (it runs on the CPU), and kernels the pipeline calls that are not here.

Every metrics file records the probe of the families whose library its job loaded (`job_probe`, in
`provenance.hardware.numerics_probe`; a job that never loaded torch pays nothing for it), with the libraries'
versions, MKL's CNR branch as MKL applies it and the threads. `lem plan numerics` runs every family here, and
compares two probes (of metrics files or of `--out` JSON files), naming the kernels that differ.
"""

from __future__ import annotations

import ctypes
import glob
import hashlib
import json
import os
import re
import sys
from collections.abc import Callable
from typing import Any

from lem.core.inputs import InputError, read_text

# Imported inside functions: torch, numpy, faiss and threadpoolctl (`lem.core.numerics` imports this module
# before the `lem` command pins the libraries, and a job's probe runs only the libraries the job loaded)

VERSION = 1  # of the inputs and kernels: a probe of another version is not comparable
FAMILIES = ("torch", "numpy", "faiss")
HASH_CHARS = 16

# MKL's CNR branches (mkl_cbwr_get's values; MKL_CBWR names them)
MKL_BRANCHES = {
    0: "OFF",
    1: "BRANCH_OFF",
    2: "AUTO",
    3: "COMPATIBLE",
    4: "SSE2",
    6: "SSSE3",
    7: "SSE4_1",
    8: "SSE4_2",
    9: "AVX",
    10: "AVX2",
    11: "AVX512_MIC",
    12: "AVX512",
    13: "AVX512_MIC_E1",
    14: "AVX512_E1",
}
MKL_STRICT = 0x10000


def _values(xp: Any, n: int, salt: int) -> Any:
    """`n` numbers in [-1, 1), multiples of 2**-23, from integer hashing of 0..n-1 (`xp` is torch or numpy):
    exact integer arithmetic, the same bits on every CPU, and no library's random generator (whose normal
    sampler is itself vectorised)."""
    on_cpu = {"device": "cpu"} if xp.__name__ == "torch" else {}  # whatever default device the job set
    h = xp.arange(n, dtype=xp.int64, **on_cpu)
    h = ((h + salt * 1_000_003) & 0xFFFFFFFF) * 0x2C1B3C6D & 0xFFFFFFFF  # products stay under 2**63
    h = h ^ (h >> 15)
    h = (h * 0x297A2D39) & 0xFFFFFFFF
    h = h ^ (h >> 12)
    h = (h * 0x2C1B3C6D) & 0xFFFFFFFF
    h = (h ^ (h >> 15)) & 0xFFFFFF
    if xp.__name__ == "torch":
        return (h - (1 << 23)).to(xp.float32) * 2.0**-23
    return (h - (1 << 23)).astype(xp.float32) * xp.float32(2.0**-23)


def _labels(xp: Any, n: int, salt: int, high: int) -> Any:
    """`n` integers in [0, high) (class labels, embedding rows), as `_values`."""
    v = _values(xp, n, salt)
    scaled = (v + 1.0) * (high / 2.0)
    return scaled.long() if xp.__name__ == "torch" else scaled.astype(xp.int64)


def _digest(*arrays: Any) -> str:
    """The first `HASH_CHARS` hex digits of the sha256 of the arrays' bytes (C order), one after another."""
    h = hashlib.sha256()
    for a in arrays:
        if hasattr(a, "detach"):  # a torch tensor
            a = a.detach().cpu().contiguous().numpy()
        h.update(f"{a.dtype}{tuple(a.shape)}".encode())
        h.update(a.tobytes(order="C"))
    return h.hexdigest()[:HASH_CHARS]


def _torch_kernels() -> dict[str, Callable[[], tuple]]:
    import torch
    import torch.nn.functional as F

    def m(rows: int, cols: int, salt: int) -> Any:
        return _values(torch, rows * cols, salt).reshape(rows, cols)

    def mm() -> tuple:
        return (torch.mm(m(256, 256, 1), m(256, 256, 2)),)

    def mm_long_k() -> tuple:
        return (torch.mm(m(32, 4096, 3), m(4096, 32, 4)),)

    def addmm() -> tuple:
        return (F.linear(m(64, 256, 5), m(192, 256, 6), _values(torch, 192, 7)),)

    def bmm() -> tuple:
        return (torch.bmm(m(8 * 64, 96, 8).reshape(8, 64, 96), m(8 * 96, 64, 9).reshape(8, 96, 64)),)

    def linear_backward() -> tuple:
        x = m(64, 256, 10).requires_grad_()
        w = m(192, 256, 11).requires_grad_()
        b = _values(torch, 192, 12).requires_grad_()
        (F.linear(x, w, b) * m(64, 192, 13)).sum().backward()
        return x.grad, w.grad, b.grad

    def sdpa() -> tuple:
        q, k, v = (
            _values(torch, 2 * 4 * 64 * 32, s).reshape(2, 4, 64, 32).requires_grad_() for s in (14, 15, 16)
        )
        mask = torch.ones(2, 1, 1, 64, dtype=torch.bool, device="cpu")
        mask[1, ..., 48:] = False  # the second sequence padded
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        (out * _values(torch, out.numel(), 17).reshape(out.shape)).sum().backward()
        return out, q.grad, k.grad, v.grad

    def softmax() -> tuple:
        return (F.softmax(m(64, 1000, 18) * 8, dim=-1),)

    def log_softmax() -> tuple:
        return (F.log_softmax(m(64, 1000, 19) * 8, dim=-1),)

    def layer_norm() -> tuple:
        x = m(64, 768, 20).requires_grad_()
        w = (_values(torch, 768, 21) + 1).requires_grad_()
        b = _values(torch, 768, 22).requires_grad_()
        y = F.layer_norm(x, (768,), w, b, eps=1e-5)
        (y * m(64, 768, 23)).sum().backward()
        return y, x.grad, w.grad, b.grad

    def gelu() -> tuple:
        x = (m(32, 1024, 24) * 4).requires_grad_()
        y = F.gelu(x)
        (y * m(32, 1024, 25)).sum().backward()
        return y, x.grad

    def exp() -> tuple:
        return (torch.exp(_values(torch, 1 << 16, 26) * 16),)

    def tanh() -> tuple:
        return (torch.tanh(_values(torch, 1 << 16, 27) * 4),)

    def erf() -> tuple:
        return (torch.erf(_values(torch, 1 << 16, 28) * 4),)

    def log() -> tuple:
        return (torch.log(_values(torch, 1 << 16, 29).abs() + 2.0**-20),)

    def sum_() -> tuple:
        return (torch.sum(_values(torch, 1 << 18, 30)),)

    def mean_dim() -> tuple:
        return (m(64, 2048, 31).mean(dim=1), m(2048, 64, 32).mean(dim=0))

    def embedding_backward() -> tuple:
        weight = m(1000, 64, 33).requires_grad_()
        ids = _labels(torch, 4096, 34, 1000)  # rows repeat: their gradients add up
        (F.embedding(ids, weight) * m(4096, 64, 35)).sum().backward()
        return (weight.grad,)

    def cross_entropy() -> tuple:
        logits = (m(256, 1000, 36) * 8).requires_grad_()
        labels = _labels(torch, 256, 37, 1000)
        labels[::7] = -100  # unlabelled positions, as the masked-LM loss has them
        loss = F.cross_entropy(logits, labels, ignore_index=-100)
        loss.backward()
        return loss, logits.grad

    def adamw() -> tuple:
        p = torch.nn.Parameter(m(256, 256, 38))
        opt = torch.optim.AdamW([p], lr=1e-3, weight_decay=0.01)
        for salt in (39, 40):  # two steps: the moments' square roots and bias corrections at work
            p.grad = m(256, 256, salt) * 2.0**-4
            opt.step()
        state = opt.state[p]
        return p.data, state["exp_avg"], state["exp_avg_sq"]

    def normalize() -> tuple:
        return (F.normalize(m(512, 256, 41), dim=-1),)

    return {
        "mm": mm,
        "mm_long_k": mm_long_k,
        "addmm": addmm,
        "bmm": bmm,
        "linear_backward": linear_backward,
        "sdpa": sdpa,
        "softmax": softmax,
        "log_softmax": log_softmax,
        "layer_norm": layer_norm,
        "gelu": gelu,
        "exp": exp,
        "tanh": tanh,
        "erf": erf,
        "log": log,
        "sum": sum_,
        "mean_dim": mean_dim,
        "embedding_backward": embedding_backward,
        "cross_entropy": cross_entropy,
        "adamw": adamw,
        "normalize": normalize,
    }


def _aligned(np: Any, a: Any) -> Any:
    """`a` copied to 64-byte-aligned memory (numpy aligns to 16 only; BLAS kernels may take another path
    for another alignment: the probe's inputs must not move between runs)."""
    buf = np.empty(a.nbytes + 64, dtype=np.uint8)
    start = (-buf.ctypes.data) % 64
    out = buf[start : start + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


def _numpy_kernels() -> dict[str, Callable[[], tuple]]:
    import numpy as np

    def m(rows: int, cols: int, salt: int) -> Any:
        return _aligned(np, _values(np, rows * cols, salt).reshape(rows, cols))

    def dot() -> tuple:
        return (np.asarray(np.dot(m(1, 1 << 16, 51)[0], m(1, 1 << 16, 52)[0])),)

    def matmul() -> tuple:
        return (m(256, 256, 53) @ m(256, 256, 54).T,)  # the mining engine's blocks: x @ y.T

    def matmul_long_k() -> tuple:
        return (m(32, 4096, 55) @ m(4096, 32, 56),)

    def sum_() -> tuple:
        return (np.asarray(np.sum(m(1, 1 << 18, 57))),)

    def mean_rows() -> tuple:
        return (m(1024, 16, 58).mean(axis=1), m(1024, 256, 59).mean(axis=1))

    return {"dot": dot, "matmul": matmul, "matmul_long_k": matmul_long_k, "sum": sum_, "mean_rows": mean_rows}


def _faiss_kernels() -> dict[str, Callable[[], tuple]]:
    import faiss
    import numpy as np

    def flat_ip() -> tuple:
        base = _aligned(np, _values(np, 2048 * 64, 61).reshape(2048, 64))
        queries = _aligned(np, _values(np, 64 * 64, 62).reshape(64, 64))
        index = faiss.IndexFlatIP(64)
        index.add(base)
        scores, ids = index.search(queries, 10)
        return scores, ids

    return {"flat_ip": flat_ip}


KERNELS: dict[str, Callable[[], dict[str, Callable[[], tuple]]]] = {
    "torch": _torch_kernels,
    "numpy": _numpy_kernels,
    "faiss": _faiss_kernels,
}


def _run_family(family: str) -> dict[str, str]:
    kernels = KERNELS[family]()
    if family != "torch":
        return {f"{family}.{name}": _digest(*run()) for name, run in kernels.items()}
    import torch

    # the job's state is left as it was: no global generator is drawn from, and autograd runs even when the
    # metrics are written under no_grad or inference mode
    with torch.inference_mode(False), torch.enable_grad():
        return {f"torch.{name}": _digest(*run()) for name, run in kernels.items()}


def _mkl(torch: Any) -> dict[str, Any] | None:
    """MKL as linked into PyTorch: its version, and the CNR branch it applies (`MKL_CBWR` asks for one; MKL
    applies the Intel-only branches, AVX2 among them, on Intel CPUs only, and AUTO elsewhere), read from
    libtorch_cpu's MKL service functions; None without MKL."""
    if not torch.backends.mkl.is_available():
        return None
    libs = glob.glob(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.*"))
    info: dict[str, Any] = {"requested": os.environ.get("MKL_CBWR")}
    try:
        lib = ctypes.CDLL(libs[0])
        buf = ctypes.create_string_buffer(256)
        lib.MKL_Get_Version_String(buf, len(buf))
        text = buf.value.decode(errors="replace")
        match = re.search(r"Version ([\d.]+)\S* Build (\d+)", text)
        info["version"] = f"{match.group(1)} build {match.group(2)}" if match else text
    except (IndexError, OSError, AttributeError):
        return {**info, "version": None}
    getters = {
        "cnr": ("mkl_serv_cbwr_get", (-1,)),  # MKL_CBWR_ALL: the branch and the STRICT flag
        "auto_branch": ("mkl_serv_cbwr_get_auto_branch", ()),
        "intel_cpu": ("mkl_serv_intel_cpu_true", ()),
    }
    for key, (name, args) in getters.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            info[key] = None
            continue
        fn.restype = ctypes.c_int
        value = fn(*args)
        if key == "intel_cpu":
            info[key] = bool(value)
        else:
            branch = MKL_BRANCHES.get(value & ~MKL_STRICT, str(value & ~MKL_STRICT))
            info[key] = branch + (",STRICT" if value & MKL_STRICT else "")
    return info


def _libraries(families: list[str]) -> dict[str, Any]:
    """The versions and code paths of the libraries the probe ran, as this process sees them."""
    libs: dict[str, Any] = {}
    if "torch" in families:
        import torch

        shown = torch.__config__.show()
        onednn = re.search(r"(?:MKL-DNN|oneDNN)[^\n]*?v([\d.]+)", shown)
        libs["torch"] = {
            "version": torch.__version__,
            "kernel_level": torch.backends.cpu.get_cpu_capability(),
            "mkl": _mkl(torch),
            "onednn": onednn.group(1) if onednn else None,
        }
    if "numpy" in families:
        import numpy as np

        libs["numpy"] = {"version": np.__version__}
    if "faiss" in families:
        import faiss

        simd = getattr(faiss, "SIMDConfig", None)
        libs["faiss"] = {
            "version": faiss.__version__,
            "simd_level": simd.get_level_name() if simd is not None else faiss.get_compile_options().strip(),
        }
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return libs
    openblas = [lib for lib in threadpool_info() if lib.get("internal_api") == "openblas"]
    libs["openblas"] = {  # numpy's and faiss's own copies, by version
        str(lib.get("version")): {"architecture": lib.get("architecture"), "threads": lib.get("num_threads")}
        for lib in sorted(openblas, key=lambda lib: str(lib.get("version")))
    }
    return libs


def probe(families: list[str] | None = None, threads: int | None = None) -> dict[str, Any]:
    """The probe of `families` (default: those whose library this process has loaded, so nothing is imported):
    `version`, `families` (those run), `threads`, `libraries` and `kernels` (`family.kernel`: short sha256).
    A family named but not installed is left out, as is one not loaded when none are named. `threads`: torch's
    threads set first (for `lem plan numerics --threads`; a job's probe runs at the job's)."""
    if families is None:
        run = [f for f in FAMILIES if f in sys.modules]
    else:
        run = []
        for family in families:
            try:
                __import__(family)
            except ImportError:
                continue
            run.append(family)
    if threads and "torch" in run:
        import torch

        torch.set_num_threads(threads)
    kernels: dict[str, str] = {}
    for family in run:
        kernels.update(_run_family(family))
    threads: dict[str, Any] = {}
    if "torch" in run:
        import torch

        threads["torch"] = torch.get_num_threads()
    return {
        "version": VERSION,
        "families": run,
        "threads": threads,
        "libraries": _libraries(run),
        "kernels": kernels,
    }


def job_probe() -> dict[str, Any]:
    """What a metrics file records (`lem.core.numerics.hardware_provenance`, once per process): the probe of
    the families the job loaded."""
    return probe(None)


# --- reading and comparing probes --------------------------------------------------------------------------


def probe_of(data: Any, source: str) -> dict[str, Any]:
    """The probe in `data`: a probe itself (`lem plan numerics --out`) or a metrics file (its
    `provenance.hardware.numerics_probe`); InputError naming `source` otherwise."""
    if isinstance(data, dict) and isinstance(data.get("kernels"), dict):
        return data
    found = (
        data.get("provenance", {}).get("hardware", {}).get("numerics_probe")
        if isinstance(data, dict)
        else None
    )
    if not isinstance(found, dict) or not isinstance(found.get("kernels"), dict):
        raise InputError(
            f"{source}: expected a numerics probe (`lem plan numerics --out`) or a metrics file with "
            "provenance.hardware.numerics_probe, found neither (a metrics file of an older version has none)"
        )
    return found


def read_probe(path: str | os.PathLike) -> dict[str, Any]:
    try:
        data = json.loads(read_text(path))
    except json.JSONDecodeError as err:
        raise InputError(f"{path}:{err.lineno}: expected JSON, got {err.msg.lower()}") from None
    return probe_of(data, str(path))


def _flat(obj: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(obj, dict):
        out: dict[str, Any] = {}
        for k, v in obj.items():
            out.update(_flat(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: obj}


def differing_kernels(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """The kernels both probes ran whose hashes differ, in `a`'s order."""
    kb = b["kernels"]
    return [k for k, h in a["kernels"].items() if k in kb and kb[k] != h]


def compare_text(a: dict[str, Any], b: dict[str, Any], names: tuple[str, str] = ("A", "B")) -> str:
    """Both probes kernel by kernel, then one line naming the kernels that differ, and the libraries' and
    threads' fields that differ (another thread count alone can change a parallel reduction)."""
    width = max([len(k) for k in (*a["kernels"], *b["kernels"])] + [6])
    lines = [f"A: {names[0]}", f"B: {names[1]}", ""]
    if a.get("version") != b.get("version"):
        lines.append(
            f"probe versions differ ({a.get('version')} vs {b.get('version')}): hashes not comparable"
        )
    lines.append(f"{'kernel':<{width}}  {'A':<{HASH_CHARS}}  {'B':<{HASH_CHARS}}")
    for k in dict.fromkeys([*a["kernels"], *b["kernels"]]):
        ha, hb = a["kernels"].get(k), b["kernels"].get(k)
        mark = "" if ha == hb else ("  not run on both" if ha is None or hb is None else "  DIFFERS")
        lines.append(f"{k:<{width}}  {ha or '-':<{HASH_CHARS}}  {hb or '-':<{HASH_CHARS}}{mark}")
    differ = differing_kernels(a, b)
    shared = sum(k in b["kernels"] for k in a["kernels"])
    lines.append("")
    if differ:
        lines.append(f"{len(differ)} of {shared} kernels differ: {', '.join(differ)}")
    else:
        lines.append(f"all {shared} kernels run on both agree")
    fa = _flat({"threads": a.get("threads", {}), "libraries": a.get("libraries", {})})
    fb = _flat({"threads": b.get("threads", {}), "libraries": b.get("libraries", {})})
    other = [f"{k}: {fa.get(k)} vs {fb.get(k)}" for k in dict.fromkeys([*fa, *fb]) if fa.get(k) != fb.get(k)]
    if other:
        lines.append("and these differ: " + "; ".join(other))
    return "\n".join(lines) + "\n"


def table(p: dict[str, Any]) -> str:
    """One probe as text: the libraries and threads, then a kernel and its hash a line."""
    lines = [f"{k}: {v}" for k, v in _flat({"threads": p["threads"], "libraries": p["libraries"]}).items()]
    width = max([len(k) for k in p["kernels"]] + [6])
    lines += ["", f"{'kernel':<{width}}  sha256"]
    lines += [f"{k:<{width}}  {h}" for k, h in p["kernels"].items()]
    return "\n".join(lines) + "\n"
