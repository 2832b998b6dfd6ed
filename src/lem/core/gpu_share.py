"""GPU resources of the training jobs: one GPU each, or a share of one (`resources.gpu_share`).

At the paper's batch of 32 sentences a pre-training job keeps an H100 mostly idle and needs a fraction of
its memory, so several of the independent jobs can run on one GPU at once. Snakemake 9's resources are
integers, so a share is counted in slots: with `resources.gpu_share: N` (> 1) every training job asks for
no whole GPU (`gpu=0`) but one `gpu_slots`, and the run gives N slots per GPU:

    snakemake --cores all --resources gpu=1 gpu_slots=N ...        (one GPU, N jobs on it)

On SLURM the same jobs ask for one GPU shard each (`gres=shard:1`, profiles/slurm/config.yaml), N shards
per GPU in gres.conf. With `gpu_share: 1` (the default) nothing changes: `gpu` = resources.gpu_training.
What a job computes does not depend on its neighbours on the GPU (tests/dag/test_gpu_share_jobs.py). What sharing
gains is measured by `bench/gpu_training.py --concurrent N` (scripts/gpu-check.sh), and `lem plan cost`
counts GPU-hours at that aggregate rate, `plan.shared_tokens_per_second` (the one-job rate while "pending").
"""

from __future__ import annotations

from typing import Any

SLOTS = "gpu_slots"  # the Snakemake resource of a share of a GPU


def training_resources(resources: dict[str, Any]) -> dict[str, Any]:
    """Snakemake resources of a training job from the config's `resources` section (schema defaults filled)."""
    gpus, share = int(resources.get("gpu_training", 0)), int(resources.get("gpu_share", 1))
    out: dict[str, Any] = {
        "mem_mb": int(resources["mem_mb_training"]),
        "runtime": int(resources["runtime_training"]),
    }
    if share < 1:
        raise ValueError(f"resources.gpu_share={share}: expected training jobs per GPU, an integer >= 1")
    if share == 1 or gpus == 0:  # one GPU per job (or a CPU run: nothing to share)
        return {"gpu": gpus, **out}
    if gpus != 1:
        raise ValueError(
            f"resources.gpu_share={share} shares one GPU between jobs: it needs resources.gpu_training: 1, "
            f"not {gpus} (a data-parallel job takes whole GPUs)"
        )
    return {"gpu": 0, SLOTS: 1, **out}


def slots_argument(resources: dict[str, Any], gpus: int = 1) -> str:
    """The `--resources` of a local run on `gpus` GPUs: `gpu=G gpu_slots=G*N` (N = resources.gpu_share)."""
    share = int(resources.get("gpu_share", 1))
    return f"gpu={gpus}" + (f" {SLOTS}={gpus * share}" if share > 1 else "")
