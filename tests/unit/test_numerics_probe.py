"""The numerics probe (lem.core.numerics_probe): every kernel family of the pipeline hashed on fixed inputs,
the same in one process and across processes, recorded in every metrics file, and `lem plan numerics`, which
names the kernels that differ between two probes."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

from lem import cli
from lem.core import numerics, numerics_probe
from lem.core.numerics_probe import FAMILIES, differing_kernels, probe

KERNELS = {
    "torch": [
        "mm", "mm_long_k", "addmm", "bmm", "linear_backward", "sdpa", "softmax", "log_softmax", "layer_norm",
        "gelu", "exp", "tanh", "erf", "log", "sum", "mean_dim", "embedding_backward", "cross_entropy", "adamw",
        "normalize",
    ],
    "numpy": ["dot", "matmul", "matmul_long_k", "sum", "mean_rows"],
    "faiss": ["flat_ip"],
}  # fmt: skip


def installed() -> list[str]:
    out = []
    for family in FAMILIES:
        try:
            __import__(family)
        except ImportError:
            continue
        out.append(family)
    return out


@pytest.fixture(scope="module")
def first() -> dict:
    """This process's probe of every family installed (computed once for the module's tests)."""
    return probe(installed())


def test_the_probe_covers_every_kernel_family_and_repeats_in_process(first):
    families = installed()
    assert families[:2] == ["torch", "numpy"]  # the environment of the tests has both (faiss: envs/mining)
    assert first["families"] == families and first["version"] == numerics_probe.VERSION
    assert list(first["kernels"]) == [f"{f}.{k}" for f in families for k in KERNELS[f]]
    assert all(re.fullmatch(r"[0-9a-f]{16}", h) for h in first["kernels"].values())
    assert len(set(first["kernels"].values())) == len(first["kernels"])  # no two kernels hash the same output
    assert first["threads"]["torch"] == torch.get_num_threads()
    libs = first["libraries"]
    assert libs["torch"]["version"] == torch.__version__ and libs["numpy"]["version"] == np.__version__
    if torch.backends.mkl.is_available():  # x86-64 wheels: MKL's version and the CNR branch it applies
        assert libs["torch"]["mkl"]["version"] and libs["torch"]["mkl"]["cnr"]
    assert probe(families) == first
    json.dumps(first)  # written as JSON


def test_the_inputs_are_exact_and_the_same_in_torch_and_numpy():
    t = numerics_probe._values(torch, 4096, 7)
    n = numerics_probe._values(np, 4096, 7)
    assert t.dtype == torch.float32 and n.dtype == np.float32
    assert t.numpy().tobytes() == n.tobytes()
    assert n.min() >= -1 and n.max() < 1 and np.all(n * 2**23 == np.round(n * 2**23))
    assert len(np.unique(n)) > 4000  # not a short cycle
    labels = numerics_probe._labels(torch, 1000, 3, 10)
    assert labels.min() >= 0 and labels.max() < 10 and len(labels.unique()) == 10


def test_two_processes_give_the_same_probe(tmp_path, first):
    """`lem plan numerics` in two fresh processes: the same hashes, and the same as in this process when the
    threads and the libraries' levels and code paths are the same."""
    outs = []
    for i in range(2):
        out = tmp_path / f"probe{i}.json"
        subprocess.run([sys.executable, "-m", "lem", "plan", "numerics", "--out", str(out)], check=True,
                       capture_output=True, text=True)  # fmt: skip
        outs.append(json.loads(out.read_text()))
    assert outs[0]["kernels"] == outs[1]["kernels"] and outs[0]["libraries"] == outs[1]["libraries"]
    assert list(outs[0]["kernels"]) == [f"{f}.{k}" for f in installed() for k in KERNELS[f]]
    hw = outs[0]["hardware"]
    assert hw["cpu_numerics"] == numerics.numerics_mode() and set(hw["pinned"]) == set(numerics.PINNED)
    if first["threads"] == outs[0]["threads"] and first["libraries"] == outs[0]["libraries"]:
        assert first["kernels"] == outs[0]["kernels"]  # same threads, levels and code paths: same hashes


def test_a_job_that_loads_no_numeric_library_runs_no_kernel():
    """A metrics file's probe runs the families its job loaded: a job without torch imports none for it."""
    code = (
        "import sys; from lem.core.numerics import hardware_provenance; "
        "p = hardware_provenance()['numerics_probe']; "
        "print(p['families'], p['kernels'], 'torch' in sys.modules, 'numpy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.split() == ["[]", "{}", "False", "False"]


def test_metrics_files_record_the_probe_of_the_loaded_families(first):
    numerics.hardware_provenance.cache_clear()
    try:
        recorded = numerics.hardware_provenance()["numerics_probe"]
    finally:
        numerics.hardware_provenance.cache_clear()
    loaded = [f for f in FAMILIES if f in sys.modules]
    assert recorded["families"] == loaded and "torch" in loaded
    assert recorded["kernels"] == {k: h for k, h in first["kernels"].items() if k.split(".")[0] in loaded}


def test_the_probe_leaves_the_jobs_state_alone():
    """Written at the end of a job: no global generator drawn from, grad mode as it was, and it runs under
    no_grad and inference mode alike."""
    torch.manual_seed(3)
    rng, np_rng = torch.get_rng_state(), np.random.get_state()
    with torch.no_grad():
        under_no_grad = probe(["torch"])
        assert not torch.is_grad_enabled()
    with torch.inference_mode():
        assert probe(["torch"]) == under_no_grad
    assert torch.equal(torch.get_rng_state(), rng) and np.random.get_state()[1].tolist() == np_rng[1].tolist()
    assert torch.is_grad_enabled()


def test_compare_names_the_kernels_that_differ(tmp_path, capsys):
    here = probe(["numpy"])
    other = copy.deepcopy(here)
    other["kernels"]["numpy.matmul"] = "0" * 16  # as another machine's BLAS would
    other["threads"]["torch"] = 64
    metrics = tmp_path / "metrics.json"  # a metrics file holds it in provenance.hardware
    metrics.write_text(json.dumps({"keys": {"task": "mining"}, "f1": 0.1,
                                   "provenance": {"hardware": {"cpu": "X", "numerics_probe": here}}}))  # fmt: skip
    probe_file = tmp_path / "probe.json"
    probe_file.write_text(json.dumps(other))
    assert differing_kernels(here, other) == ["numpy.matmul"]
    assert cli.main(["plan", "numerics", "--compare", str(metrics), str(probe_file)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^numpy\.matmul +[0-9a-f]{16} +0{16}  DIFFERS$", out, re.M)
    assert re.search(r"^numpy\.dot +([0-9a-f]{16}) +\1$", out, re.M)
    assert "1 of 5 kernels differ: numpy.matmul\n" in out
    assert "threads.torch: None vs 64" in out  # what else differs: another thread count alone may change sums

    same = numerics_probe.compare_text(here, here)
    assert "all 5 kernels run on both agree" in same and "DIFFERS" not in same


def test_compare_refuses_a_file_without_a_probe(tmp_path, capsys):
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"f1": 0.1, "provenance": {"hardware": {"cpu": "X"}}}))
    assert cli.main(["plan", "numerics", "--compare", str(old), str(old)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"lem plan numerics: {old}: expected a numerics probe") and err.count("\n") == 1
    assert cli.main(["plan", "numerics", "--compare", str(old), str(old), str(old)]) == 1
    assert "one or two files" in capsys.readouterr().err
