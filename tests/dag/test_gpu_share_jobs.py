"""Training jobs sharing a GPU (`resources.gpu_share`, lem.core.gpu_share) in a real Snakemake run: two training
jobs run side by side under the sharing resource write the files they write one after the other. The resources
every training rule asks for: tests/planning/test_gpu_share.py."""

from __future__ import annotations

import sys
import textwrap

from support.dag import snakemake

SNAKEFILE = """
from lem.core.gpu_share import training_resources

rule all:
    input: expand("out/{job}.npy", job=["a", "b"])

rule train:
    output: "out/{job}.npy", seen="out/{job}.seen"
    resources: **training_resources(config["resources"])
    params: wait=config["wait"]
    shell: "{python} {script} {wildcards.job} {output[0]} {output.seen} {params.wait}"
"""


TRAIN = """
import sys, time
from pathlib import Path

job, out, seen, wait = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), float(sys.argv[4])
Path(f"started.{job}").touch()  # before the slow imports: a loaded machine delays them, not the marker

import numpy as np
import torch

other = "b" if job == "a" else "a"
t = time.time()
while not Path(f"started.{other}").exists() and time.time() - t < wait:
    time.sleep(0.05)
seen.write_text(str(Path(f"started.{other}").exists()))
torch.manual_seed({"a": 1, "b": 2}[job])
torch.set_num_threads(1)
model = torch.nn.Linear(16, 4)
opt = torch.optim.AdamW(model.parameters(), lr=0.01)
x, y = torch.randn(64, 16), torch.randn(64, 4)
for _ in range(200):
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
np.save(out, torch.cat([p.detach().flatten() for p in model.parameters()]).numpy())
"""


def test_two_training_jobs_side_by_side_write_the_files_they_write_in_turn(tmp_path):
    """Under `gpu_share: 2` and `--resources gpu=1 gpu_slots=2`, Snakemake runs both training jobs at once
    (each sees the other start); with one slot they run in turn; the trained weights are the same bytes."""
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "Snakefile").write_text(
        textwrap.dedent(SNAKEFILE)
        .replace("{python}", sys.executable)
        .replace("{script}", str(tmp_path / "train.py"))
    )
    outputs = {}
    for slots, wait in ((2, 120), (1, 1)):
        run = tmp_path / f"slots{slots}"
        run.mkdir()
        args = ["--cores", "2", "--resources", "gpu=1", f"gpu_slots={slots}",
                "--config", "resources={'gpu_training': 1, 'gpu_share': 2, 'mem_mb_training': 100, "
                "'runtime_training': 5}", f"wait={wait}"]  # fmt: skip
        proc = snakemake(run, *args, config=None, snakefile=tmp_path / "Snakefile", timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        seen = {job: (run / f"out/{job}.seen").read_text() for job in "ab"}
        # side by side: each saw the other start; in turn: only the second saw the first's marker
        assert sorted(seen.values()) == (["True", "True"] if slots == 2 else ["False", "True"]), (slots, seen)
        outputs[slots] = {job: (run / f"out/{job}.npy").read_bytes() for job in "ab"}
    assert outputs[2] == outputs[1]
