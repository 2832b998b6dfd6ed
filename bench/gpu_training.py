"""Paper-scale training throughput: the pipeline's training stage vs the best bare loop, on the same batches.

Model: xlm-roberta-base's architecture (hidden 768, 12 heads, FFN 3072) with its real vocabulary size
(250,002), randomly initialised; LEM masking. On a GPU: 12 layers, batch 32, 30-100 subwords per example,
bf16 autocast. On the CPU (no GPU): 2 layers, batch 8, 16-48 subwords, a few steps, float32, so that it
ends in a few minutes on 2 cores. Measured:

- train (`--modes`, each a run of `lem.pretrain.train_stage` as the pipeline runs it: Trainer,
  `lem.core.training` batch sampler and per-batch-seeded collator, LM head on the labelled positions,
  `precision: auto`, fused AdamW on CUDA, SDPA attention; steps timed from one step's end to the next, so the
  collation of the next batch counts, with the GPU synchronised at the first and last timed step only;
  evaluation and saving excluded):
  `eager` (`static_shapes: off`, `compile: none`: the path of every run before issue 34),
  `static` (`static_shapes: on`: batches padded to the stage's length, the labelled positions in a fixed-size
  buffer, no host synchronisation per step, asynchronous copies from pinned memory),
  `compile-default` and `compile-reduce-overhead` (static + `training.compile`: torch.compile, and CUDA graphs).
- bare: a hand-written loop over the same batches with the same masks, collated beforehand: encoder, LM head
  on the labelled positions only, float32 cross-entropy, (fused) AdamW; bf16 autocast on a GPU.
- the loss path: LM head on the labelled positions vs HF's head on every position, in forward + backward
  alone (no optimizer step), in the bare loop's whole step and in the training stage's (`loss_positions:
  labelled` vs `all`): the CPU comparison the issue asks for (also printed on a GPU).

Tokens are the non-padding input tokens. MFU: model FLOPs (6 x non-embedding parameters x padded tokens
+ 6 x hidden x vocabulary x positions through the LM head) per second over the peak: 989 TFLOP/s dense bf16
on an H100/H200, 312 on an A100; on the CPU the measured float32 matmul peak of this machine and thread
count. The last line reads `train_tokens_per_s=... optimised_tokens_per_s=... optimised_mode=...
bare_tokens_per_s=... train_vs_bare_ratio=... mfu=... device=...` (train: the eager path; optimised: the
fastest other mode measured).

    python bench/gpu_training.py [--modes eager,static,...] [--steps N] [--layers L] [--batch-size B]
                                 [--workers W] [--threads T] [--results FILE.jsonl]

`--count-syncs` (GPU): instead of rates, the host synchronisations per timed step of each mode (torch's sync
debug mode): the static path's claim of none per step, checked.

`--results`: every figure is appended to this JSON-lines file as soon as it is measured (one line per mode),
so a run that is cut short still leaves the figures it got (scripts/gpu-check.sh).

`--concurrent N`: N processes on the same device (one GPU), each running the training stage alone on its own
copy of the batches; their timed steps start together (each waits, after its warm-up steps, until all are
there): the aggregate tokens/s = the tokens of the steps that end while every job is in its timed steps / that
window's length (a 2026-11-26 try without the second barrier timed windows that overlapped 0.4 s of 12.7),
and each job's own rate; the use of a GPU by several training jobs at once (`resources.gpu_share`). The jobs
run `--mode` (default `static`). `--mps`: under the CUDA MPS daemon (started for the run with its own pipe
and log folders, stopped after; "mps unavailable" and exit 3 where it cannot be started). Last line:
`concurrent=N aggregate_tokens_per_s=... per_job_tokens_per_s=... mode=... mps=... device=...`. `--json PATH`
writes the figures. The static step does not wait for the GPU at every step: a job's step ends are taken
when the host has queued the step (at most a few steps ahead of the GPU), its window's two ends after a
synchronisation.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

V = 250_002
HIDDEN = 768
SEED = 1  # the stage's seed: its data order and masks


def make_rows(n: int, lo: int, hi: int, seed: int) -> list[dict]:
    """Feature rows as `lem features` writes them: ids, word ids (1-3 subwords per word), word flags."""
    from lem.stand_in import random_feature_rows

    return random_feature_rows(n, lo, hi, seed, V, flag_p=(0.6, 0.1, 0.2, 0.1), lang="si")


def new_model(layers: int):
    """xlm-roberta-base's architecture with `layers` layers, randomly initialised (seed 0)."""
    from lem.stand_in import SIZES, XLMR_BASE_VOCAB, random_mlm

    arch = {k: v for k, v in SIZES["base"].items() if k != "vocab_size"}
    return random_mlm(XLMR_BASE_VOCAB, seed=0, **{**arch, "num_hidden_layers": layers})


def non_embedding_params(model) -> int:
    return sum(p.numel() for n, p in model.named_parameters() if "embeddings" not in n and "decoder" not in n)


def peak_flops(device: str) -> tuple[float, str]:
    import torch

    if device == "cuda":
        name = torch.cuda.get_device_name()
        for key, peak in (("H100", 989e12), ("H200", 989e12), ("A100", 312e12)):
            if key in name:
                return peak, f"{name}, dense bf16 {peak / 1e12:.0f} TFLOP/s"
        return float("nan"), f"{name} (peak unknown)"
    a = torch.randn(1024, 1024)
    for _ in range(3):
        a @ a
    t = time.perf_counter()
    for _ in range(10):
        a @ a
    peak = 10 * 2 * 1024**3 / (time.perf_counter() - t)
    return (
        peak,
        f"CPU, measured float32 matmul {peak / 1e9:.0f} GFLOP/s on {torch.get_num_threads()} thread(s)",
    )


def bare_loop(
    batches: list[dict], layers: int, device: str, labelled: bool, warm: int, step: bool = True
) -> dict:
    """The best hand-written loop: tokens/s and FLOPs/s over the batches after `warm`; `step=False`: forward
    and backward only (the loss path alone, no optimizer step)."""
    import torch
    import torch.nn.functional as F

    model = new_model(layers).to(device)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=5e-5, weight_decay=0.0, fused=True)  # the Trainer's
    autocast = (
        torch.autocast("cuda", dtype=torch.bfloat16)
        if device == "cuda"
        else torch.autocast("cpu", enabled=False)
    )
    n_nonemb = non_embedding_params(model)
    tokens = flops = 0
    for i, b in enumerate(batches):
        if i == warm:
            if device == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
        ids, am, lab = (b[k].to(device, non_blocking=True) for k in ("input_ids", "attention_mask", "labels"))
        with autocast:
            if labelled:
                hidden = model.roberta(input_ids=ids, attention_mask=am).last_hidden_state
                sel = lab != -100
                loss = F.cross_entropy(model.lm_head(hidden[sel]).float(), lab[sel])
            else:
                loss = model(input_ids=ids, attention_mask=am, labels=lab).loss
        loss.backward()
        if step:
            opt.step()
        opt.zero_grad(set_to_none=True)
        if i >= warm:
            head = int((b["labels"] != -100).sum()) if labelled else b["input_ids"].numel()
            tokens += int(b["attention_mask"].sum())
            flops += 6 * n_nonemb * b["input_ids"].numel() + 6 * HIDDEN * V * head
    if device == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    del model, opt
    if device == "cuda":
        torch.cuda.empty_cache()
    return {"tokens_per_s": tokens / seconds, "flops_per_s": flops / seconds, "seconds": seconds}


MODES = {  # mode -> the training settings it runs with
    "eager": {"static_shapes": "off", "compile": "none"},
    "static": {"static_shapes": "on", "compile": "none"},
    "compile-default": {"static_shapes": "on", "compile": "default"},
    "compile-reduce-overhead": {"static_shapes": "on", "compile": "reduce-overhead"},
}


def pipeline_stage(rows, valid, batches, tok, args, device: str, loss_positions: str, sync=None,
                   mode: str = "eager") -> dict:  # fmt: skip
    """`lem.pretrain.train_stage` as the pipeline runs it in `mode` (`MODES`), steps timed by a callback;
    `batches` are the batches it draws (the same sampler and masks), for counting tokens and FLOPs."""
    import shutil

    from datasets import Dataset
    from transformers import TrainerCallback

    from lem.pretrain import PretrainTrainingSettings, train_stage

    marks: list[float] = []  # marks[b]: the end of batch b's step (0-based)
    syncs = SyncCounter() if getattr(args, "count_syncs", False) and device == "cuda" else None

    def now() -> float:
        # the static path does not wait for the GPU at every step: wait at the window's two ends only
        if device == "cuda" and len(marks) + 1 in (args.warm + 1, args.steps):
            import torch

            torch.cuda.synchronize()
        return time.perf_counter()

    class Clock(TrainerCallback):
        def on_step_end(self, a, state, control, **kw):
            if syncs is not None and len(marks) + 1 == args.steps:
                syncs.stop()  # before the window's closing synchronize
            marks.append(now())
            if sync is not None and len(marks) == args.warm + 1:  # --concurrent: timed windows start together
                sync()
                marks[-1] = time.perf_counter()
            if syncs is not None and len(marks) == args.warm + 1:
                syncs.start()

    settings = PretrainTrainingSettings.from_dict({
        "max_steps": args.steps, "batch_size": args.batch_size, "learning_rate": 5e-5, "checkpoint_every": args.steps,
        "min_evaluations": 1, "valid_examples": len(valid), "stats_examples": 16, "logging_steps": 10_000,
        "seed": SEED, "dataloader_num_workers": args.workers, "loss_positions": loss_positions,
        **(MODES[mode] if loss_positions == "labelled" else {"static_shapes": "off"}),
    })  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix="lem-gpu-bench-", dir=scratch_dir()))
    model = new_model(args.layers)
    n_nonemb = non_embedding_params(model)
    train_stage(
        model=model, tokenizer=tok, train_ds=Dataset.from_list(rows), valid_ds=Dataset.from_list(valid),
        masking=masking(), settings=settings, out_dir=work / "out", ckpt_dir=work / "ckpt", fp="bench",
        callbacks=[Clock()],
    )  # fmt: skip
    shutil.rmtree(work, ignore_errors=True)
    tokens = flops = 0
    step_tokens = []
    for b in batches[args.warm + 1 :]:  # the steps timed: from the end of step `warm` to the end of the last
        head = int((b["labels"] != -100).sum()) if loss_positions == "labelled" else b["input_ids"].numel()
        step_tokens.append(int(b["attention_mask"].sum()))
        flops += 6 * n_nonemb * b["input_ids"].numel() + 6 * HIDDEN * V * head
    tokens = sum(step_tokens)
    seconds = marks[args.steps - 1] - marks[args.warm]
    to_wall = time.time() - time.perf_counter()  # comparable across the processes of --concurrent
    window = (marks[args.warm] + to_wall, marks[args.steps - 1] + to_wall)
    step_ends = [m + to_wall for m in marks[args.warm + 1 : args.steps]]
    del model
    if device == "cuda":
        import torch

        torch.cuda.empty_cache()
    extra = {"syncs_per_step": syncs.count / (args.steps - 1 - args.warm)} if syncs is not None else {}
    return {"tokens_per_s": tokens / seconds, "flops_per_s": flops / seconds, "seconds": seconds, **extra,
            "tokens": tokens, "start": window[0], "end": window[1], "step_ends": step_ends,
            "step_tokens": step_tokens}  # fmt: skip


class SyncCounter:
    """Host synchronisations with the GPU between `start` and `stop`: torch's sync debug mode warns at each
    synchronising operation (`.item()`, a data-dependent shape, a blocking copy); the warnings are counted."""

    def __init__(self):
        self.count = 0
        self._ctx = None

    def start(self) -> None:
        import warnings

        import torch

        self._ctx = warnings.catch_warnings(record=True)
        self._seen = self._ctx.__enter__()
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")

    def stop(self) -> None:
        import torch

        torch.cuda.set_sync_debug_mode("default")
        self.count = sum("synchroniz" in str(w.message) for w in self._seen)
        self._ctx.__exit__(None, None, None)


def scratch_dir() -> str | None:
    """/dev/shm where it is writable and roomy (a stage saves a checkpoint with its optimizer state and its
    model: about 4.5 GB at 278M parameters, per job of --concurrent 4): timing training, not the disk; else
    the default temporary folder (a container's /dev/shm is often 64 MB)."""
    import shutil

    shm = "/dev/shm"
    try:
        roomy = os.access(shm, os.W_OK) and shutil.disk_usage(shm).free > 24e9
    except OSError:
        roomy = False
    return shm if roomy else None


def masking():
    from lem.masking.collate import MaskingSettings

    return MaskingSettings.from_dict({"strategy": "lem"})


def append_result(path: str | None, record: dict) -> None:
    """One JSON line appended to `path` (--results) at once: a run cut short keeps what it measured."""
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")


def parse_args() -> tuple[argparse.Namespace, list[str]]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=None, help="timed steps + warm-up (GPU 110, CPU 8)")
    p.add_argument("--warm", type=int, default=None, help="untimed first steps (GPU 10, CPU 2)")
    p.add_argument("--layers", type=int, default=None, help="encoder layers (GPU 12, CPU 2)")
    p.add_argument("--batch-size", type=int, default=None, help="GPU 32, CPU 8")
    p.add_argument("--workers", type=int, default=0, help="the stage's dataloader_num_workers")
    p.add_argument("--threads", type=int, default=None, help="torch threads on the CPU (default: all cores)")
    p.add_argument("--modes", default="eager,static,bare",
                   help=f"comma-separated, in this order: {', '.join(MODES)}, bare (the bare loop), loss-path "
                        "(LM head on the labelled positions vs every position, three ways)")  # fmt: skip
    p.add_argument("--mode", default="static", choices=list(MODES), help="--concurrent: the jobs' mode")
    p.add_argument("--mps", action="store_true", help="--concurrent: under the CUDA MPS daemon")
    p.add_argument("--count-syncs", action="store_true",
                   help="GPU: count the host synchronisations per timed step (torch's sync debug mode; the "
                        "rates of such a run are not comparable and are reported as syncs only)")  # fmt: skip
    p.add_argument("--passes", type=int, default=1, help="median of this many passes")
    p.add_argument(
        "--concurrent", type=int, default=0, help="N training jobs at once on the device (aggregate)"
    )
    p.add_argument("--json", help="write the figures to this JSON file")
    p.add_argument("--results", help="append every figure to this JSON-lines file as soon as it is measured")
    p.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)  # rank of a --concurrent job
    p.add_argument("--barrier", help=argparse.SUPPRESS)
    args = p.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    unknown = [m for m in modes if m not in (*MODES, "bare", "loss-path")]
    if unknown:
        p.error(f"--modes: unknown {unknown}; known: {', '.join(MODES)}, bare, loss-path")
    return args, modes


def drawn_batches(rows: list[dict], tok, args: argparse.Namespace) -> list[dict]:
    """The batches the stage draws (BatchIndexSampler, epoch 0) with the stage's masks, collated beforehand."""
    from lem.core import training
    from lem.masking.collate import BatchSeededCollator, make_collator

    order = training.BatchIndexSampler(len(rows), args.batch_size, SEED).order(0)
    collate = BatchSeededCollator(make_collator(tok, masking(), SEED), SEED)
    return [
        collate.mask([rows[i] for i in order[b * args.batch_size : (b + 1) * args.batch_size]], b)
        for b in range(args.steps)
    ]


def concurrent_job(rows, valid, batches, tok, args: argparse.Namespace, device: str) -> None:
    """One job of --concurrent: the training stage, timed from when all the jobs are warm; its figures as JSON."""

    def barrier(name: str) -> None:
        Path(args.barrier, f"{name}.{args.worker}").touch()
        while len(list(Path(args.barrier).glob(f"{name}.*"))) < args.concurrent:
            time.sleep(0.01)

    barrier("ready")  # batches built: build the models together
    job = pipeline_stage(
        rows, valid, batches, tok, args, device, "labelled", lambda: barrier("warm"), args.mode
    )
    print(json.dumps(job))


def measure_modes(modes: list[str], rows, valid, batches, tok, args: argparse.Namespace, device: str,
                  peak: float, shape: dict) -> dict[str, list[dict]]:  # fmt: skip
    """Every mode asked for, `args.passes` times: mode -> the figures of its passes, each printed (and
    appended to --results) as soon as it is measured."""
    res: dict[str, list[dict]] = {}

    def measured(key: str, run) -> None:
        for _ in range(args.passes):
            res.setdefault(key, []).append(run())
        r = res[key]
        rate = statistics.median(x["tokens_per_s"] for x in r)
        mfu = statistics.median(x["flops_per_s"] for x in r) / peak
        if "syncs_per_step" in r[0]:
            n = statistics.median(x["syncs_per_step"] for x in r)
            append_result(args.results, {"what": "syncs", "mode": key, "syncs_per_step": n, **shape})
            print(f"{key:>24}: {n:.1f} host synchronisations per step", flush=True)
            return
        append_result(
            args.results, {"what": "training", "mode": key, "tokens_per_s": rate, "mfu": mfu, **shape}
        )
        passes = ", ".join(f"{x['tokens_per_s']:.0f}" for x in r)
        print(f"{key:>24}: {rate:10.1f} tokens/s  MFU {mfu:.4f}  (passes: {passes})", flush=True)

    for mode in modes:
        if mode in MODES:
            measured(
                mode,
                lambda m=mode: pipeline_stage(rows, valid, batches, tok, args, device, "labelled", mode=m),
            )
        elif mode == "bare":
            measured("bare", lambda: bare_loop(batches, args.layers, device, labelled=True, warm=args.warm))
        elif mode == "loss-path":
            measured(
                "loss_path", lambda: bare_loop(batches, args.layers, device, True, args.warm, step=False)
            )
            measured(
                "loss_path_full_head",
                lambda: bare_loop(batches, args.layers, device, False, args.warm, step=False),
            )
            measured(
                "bare_full_head",
                lambda: bare_loop(batches, args.layers, device, labelled=False, warm=args.warm),
            )
            if "bare" not in res:
                measured(
                    "bare", lambda: bare_loop(batches, args.layers, device, labelled=True, warm=args.warm)
                )
            measured(
                "train_full_head", lambda: pipeline_stage(rows, valid, batches, tok, args, device, "all")
            )
            if "eager" not in res:
                measured("eager", lambda: pipeline_stage(rows, valid, batches, tok, args, device, "labelled"))
    return res


def summary(
    res: dict[str, list[dict]], args: argparse.Namespace, device: str, peak: float, shape: dict
) -> None:
    """The loss-path comparison (when measured), --json, and the last line of medians."""

    def med(key: str, field: str = "tokens_per_s") -> float:
        return statistics.median(r[field] for r in res[key]) if key in res else float("nan")

    if "loss_path" in res:
        for key, full, what in (("loss_path", "loss_path_full_head", "forward + backward, no optimizer step"),
                                ("bare", "bare_full_head", "bare loop, whole step"),
                                ("eager", "train_full_head", "training stage, whole step")):  # fmt: skip
            print(f"loss path ({what}): LM head on the labelled positions {med(key):.1f} tokens/s vs on every "
                  f"position {med(full):.1f}: {med(key) / med(full):.2f}x")  # fmt: skip
    optimised = max((k for k in res if k in MODES and k != "eager"), key=med, default=None)
    mfu = med("eager", "flops_per_s") / peak
    if args.json:
        figures = {key: med(key) for key in res} | {"mfu": mfu, "optimised_mode": optimised, **shape}
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n")
    opt = med(optimised) if optimised else float("nan")
    print(f"train_tokens_per_s={med('eager'):.1f} optimised_tokens_per_s={opt:.1f} optimised_mode={optimised} "
          f"bare_tokens_per_s={med('bare'):.1f} train_vs_bare_ratio={med('eager') / med('bare'):.3f} "
          f"mfu={mfu:.4f} device={device}")  # fmt: skip


def main() -> int | None:
    args, modes = parse_args()
    if args.concurrent and args.worker is None:
        return concurrent(args)

    import torch

    from lem.stand_in import word_level_tokenizer

    device = "cuda" if torch.cuda.is_available() else "cpu"
    gpu = device == "cuda"
    args.steps = args.steps or (110 if gpu else 8)
    args.warm = args.warm if args.warm is not None else (10 if gpu else 2)
    args.layers = args.layers or (12 if gpu else 2)
    args.batch_size = args.batch_size or (32 if gpu else 8)
    lo, hi = (30, 100) if gpu else (16, 48)
    if not gpu:
        torch.set_num_threads(args.threads or os.cpu_count() or 1)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    tok = word_level_tokenizer(V)
    rows = make_rows(args.steps * args.batch_size, lo, hi, seed=0)
    valid = make_rows(2 * args.batch_size, lo, hi, seed=1)
    batches = drawn_batches(rows, tok, args)
    if args.worker is not None:
        concurrent_job(rows, valid, batches, tok, args, device)
        return None
    peak, peak_note = peak_flops(device)
    name = device_name(device)
    shape = {"layers": args.layers, "batch_size": args.batch_size, "steps": args.steps, "warm": args.warm,
             "device": device, "name": name, "torch": torch.__version__}  # fmt: skip
    print(f"model: xlm-roberta-base architecture, {args.layers} layers, vocabulary {V:,}; batch {args.batch_size}, "
          f"{lo}-{hi} subwords, {args.steps} steps ({args.warm} untimed); "
          f"{'bf16 autocast' if gpu else 'float32'} on {name}; peak: {peak_note}", flush=True)  # fmt: skip
    res = measure_modes(modes, rows, valid, batches, tok, args, device, peak, shape)
    if args.count_syncs and gpu:  # rates under the sync debug mode are not rates: the counts were printed
        return None
    summary(res, args, device, peak, shape)
    return None


def device_name(device: str) -> str:
    import torch

    return torch.cuda.get_device_name(0) if device == "cuda" else "cpu"


class MPSUnavailable(RuntimeError):
    pass


def start_mps(folder: str) -> dict[str, str]:
    """Start a CUDA MPS control daemon of this user's, with its pipe and log folders under `folder`; the
    environment its clients need. Raises MPSUnavailable (why) where it cannot be started."""
    import shutil
    import subprocess

    control = shutil.which("nvidia-cuda-mps-control")
    if control is None:
        raise MPSUnavailable("no nvidia-cuda-mps-control on PATH")
    env = {"CUDA_MPS_PIPE_DIRECTORY": f"{folder}/pipe", "CUDA_MPS_LOG_DIRECTORY": f"{folder}/log"}
    for d in env.values():
        Path(d).mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [control, "-d"], env={**os.environ, **env}, capture_output=True, text=True, timeout=30
    )
    if proc.returncode != 0:
        raise MPSUnavailable(
            f"nvidia-cuda-mps-control -d: exit {proc.returncode}: {proc.stderr.strip()[:200]}"
        )
    return env


def stop_mps(env: dict[str, str]) -> None:
    import shutil
    import subprocess

    control = shutil.which("nvidia-cuda-mps-control")
    if control:
        subprocess.run([control], input="quit\n", env={**os.environ, **env}, capture_output=True, text=True,
                       timeout=60)  # fmt: skip


def concurrent(args: argparse.Namespace) -> int | None:
    """`--concurrent N`: N copies of this script as jobs (`--worker i`) started together; their figures."""
    import subprocess
    import sys

    n = args.concurrent
    barrier = tempfile.mkdtemp(prefix="lem-gpu-bench-barrier-")
    passed = [f"--{k.replace('_', '-')}={v}" for k, v in vars(args).items()
              if v is not None and k in ("steps", "warm", "layers", "batch_size", "workers", "threads", "mode")]  # fmt: skip
    env = dict(os.environ)
    mps_env: dict[str, str] | None = None
    if args.mps:
        try:
            mps_env = start_mps(tempfile.mkdtemp(prefix="lem-gpu-bench-mps-"))
        except (MPSUnavailable, OSError, subprocess.SubprocessError) as e:
            append_result(
                args.results, {"what": "concurrent", "concurrent": n, "mps": "unavailable", "why": str(e)}
            )
            print(f"mps unavailable: {e}")
            return 3
        env.update(mps_env)
    try:
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    __file__,
                    *passed,
                    f"--concurrent={n}",
                    f"--worker={i}",
                    f"--barrier={barrier}",
                ],
                stdout=subprocess.PIPE,
                text=True,
                env=env,
            )  # fmt: skip
            for i in range(n)
        ]
        outs = [p.communicate()[0] for p in procs]
    finally:
        if mps_env is not None:
            stop_mps(mps_env)
    if any(p.returncode for p in procs):
        raise SystemExit(
            f"bench/gpu_training.py --concurrent {n}: a job failed (exit codes {[p.returncode for p in procs]})"
        )
    jobs = [json.loads(o.strip().splitlines()[-1]) for o in outs]
    per_job = statistics.median(j["tokens_per_s"] for j in jobs)
    # the window in which every job was in its timed steps (they start together after the warm-up barrier; the
    # quicker ones end first): the aggregate counts the tokens of the steps that ended inside it
    start, end = max(j["start"] for j in jobs), min(j["end"] for j in jobs)
    span = max(j["end"] for j in jobs) - min(j["start"] for j in jobs)
    overlap = end - start
    if overlap <= 0:
        raise SystemExit(f"bench/gpu_training.py --concurrent {n}: the jobs' timed windows do not overlap")
    inside = sum(
        t for j in jobs for e, t in zip(j["step_ends"], j["step_tokens"], strict=True) if start < e <= end
    )
    aggregate = inside / overlap
    for j in jobs:
        del j["step_ends"], j["step_tokens"]
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    mps = "on" if mps_env is not None else "off"
    each = ", ".join(f"{j['tokens_per_s']:.0f}" for j in jobs)
    print(f"{n} training jobs ({args.mode}, MPS {mps}) at once on {device_name(device)}: each {each} "
          f"tokens/s over its own window; aggregate {aggregate:.0f} tokens/s over the {overlap:.1f} s all {n} "
          f"ran timed steps together ({overlap / span:.0%} of the {span:.1f} s from the first start to the last end)")  # fmt: skip
    figures = {"what": "concurrent", "concurrent": n, "mode": args.mode, "mps": mps,
               "aggregate_tokens_per_s": aggregate, "per_job_tokens_per_s": per_job, "overlap_seconds": overlap,
               "span_seconds": span, "device": device, "name": device_name(device)}  # fmt: skip
    append_result(args.results, figures)
    if args.json:
        Path(args.json).write_text(json.dumps({**figures, "jobs": jobs}, indent=1) + "\n")
    print(
        f"concurrent={n} aggregate_tokens_per_s={aggregate:.1f} per_job_tokens_per_s={per_job:.1f} mode={args.mode} "
        f"mps={mps} device={device}"
    )
    return None


if __name__ == "__main__":
    sys_exit = main()
    raise SystemExit(sys_exit or 0)
