#!/usr/bin/env bash
# One command for a GPU node: measure what the README's GPU rows and `plan.tokens_per_second` need.
#
#   bash scripts/gpu-check.sh [OUT.json]        (default gpu-check.json; about 20 minutes: the smoke DAG took over 10 on an H200)
#
# Runs, each under its own time limit, on the first visible GPU:
#   1. bench/gpu_training.py                 the training stage vs the bare loop, batch 32, one job
#   2. bench/gpu_training.py --concurrent 2, then 4: aggregate tokens/s of jobs sharing the GPU
#      (resources.gpu_share)
#   3. bench/mining.py --device cuda         the exact k-NN both ways at N = 500k per side (curation's search)
#   4. config/gpu-smoke.yaml end to end      snakemake --cores all --resources gpu=1, in runs/gpu-smoke
# then writes one JSON of figures (OUT.json: every step's figures, its seconds and exit status) and prints a
# table. A step that fails is recorded as failed and the others still run; the exit status is 1 if any did.
# Without a GPU it stops at once, saying so (exit 2). Python: .venv/bin/python if there is one, else
# python3 (an offline node with its own PyTorch image: ../shared/docs/gpu.md); LEM_GPU_CHECK_SKIP="smoke"
# (or any of training concurrent mining smoke, space-separated) leaves steps out.
set -u
cd "$(dirname "$0")/.."

no_gpu() {
  echo "scripts/gpu-check.sh: no GPU here ($1); run it on a GPU node" >&2
  exit 2
}
case "${CUDA_VISIBLE_DEVICES-unset}" in
  "" | "-1") no_gpu "CUDA_VISIBLE_DEVICES='${CUDA_VISIBLE_DEVICES}' hides every GPU" ;;
esac
command -v nvidia-smi > /dev/null 2>&1 || no_gpu "no nvidia-smi"
nvidia-smi -L 2> /dev/null | grep -q "^GPU " || no_gpu "nvidia-smi lists no GPU"

PY=python3
[ -x .venv/bin/python ] && PY=.venv/bin/python
"$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2> /dev/null \
  || no_gpu "$PY's torch sees no CUDA device"

OUT="${1:-gpu-check.json}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/lem-gpu-check.XXXXXX")"
SKIP=" ${LEM_GPU_CHECK_SKIP:-} "
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
status=0

step() {  # step NAME LIMIT_S JSON_FILE COMMAND...: run it with a time limit, log in $WORK/NAME.log
  local name="$1" limit="$2" json="$3"
  shift 3
  if [[ "$SKIP" == *" $name "* ]]; then
    echo "{\"step\": \"$name\", \"skipped\": true}" > "$WORK/$name.step.json"
    return
  fi
  echo "== $name: $* (at most ${limit} s; log $WORK/$name.log)"
  local t0 rc
  t0=$(date +%s.%N)
  timeout -s INT -k 30 "$limit" "$@" > "$WORK/$name.log" 2>&1
  rc=$?
  local seconds
  seconds=$("$PY" -c "import sys; print(round($(date +%s.%N) - $t0, 1))")
  [ "$rc" -eq 0 ] || { status=1; echo "   $name failed (exit $rc): tail of the log:"; tail -5 "$WORK/$name.log"; }
  printf '{"step": "%s", "rc": %d, "seconds": %s, "figures": "%s"}\n' "$name" "$rc" "$seconds" "$json" \
    > "$WORK/$name.step.json"
}

[[ "$SKIP" == *" concurrent "* ]] && SKIP="$SKIP concurrent2 concurrent4 "
step training 180 "$WORK/training.json" "$PY" bench/gpu_training.py --json "$WORK/training.json"
step concurrent2 120 "$WORK/concurrent2.json" "$PY" bench/gpu_training.py --concurrent 2 --json "$WORK/concurrent2.json"
step concurrent4 150 "$WORK/concurrent4.json" "$PY" bench/gpu_training.py --concurrent 4 --json "$WORK/concurrent4.json"
step mining 120 "$WORK/mining.json" "$PY" bench/mining.py --device cuda --json "$WORK/mining.json"
[[ "$SKIP" == *" smoke "* ]] || rm -rf runs/gpu-smoke
step smoke 1200 "" "$PY" -m snakemake --configfile config/gpu-smoke.yaml --cores all --resources gpu=1 \
  --directory runs/gpu-smoke

"$PY" - "$WORK" "$OUT" << 'EOF'
import json, sys
from pathlib import Path

work, out = Path(sys.argv[1]), Path(sys.argv[2])
steps = {}
for name in ("training", "concurrent2", "concurrent4", "mining", "smoke"):
    path = work / f"{name}.step.json"
    if not path.is_file():  # skipped with its group (LEM_GPU_CHECK_SKIP=concurrent)
        continue
    step = json.loads(path.read_text())
    figures = Path(step.pop("figures", "") or "/nonexistent")
    if figures.is_file():
        step["figures"] = json.loads(figures.read_text())
    steps[name] = step
import torch  # noqa: E402

result = {"device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU", "torch": torch.__version__, "steps": steps}
out.write_text(json.dumps(result, indent=1) + "\n")
f = {k: s.get("figures", {}) for k, s in steps.items()}
rows = [
    ("training stage, batch 32, one job (tokens/s)", f["training"].get("train") if "training" in f else None),
    ("bare loop, same batches (tokens/s)", f["training"].get("bare") if "training" in f else None),
    ("MFU of the training stage", f["training"].get("mfu") if "training" in f else None),
    ("2 jobs on the GPU: aggregate (tokens/s)", f.get("concurrent2", {}).get("aggregate_tokens_per_s")),
    ("4 jobs on the GPU: aggregate (tokens/s)", f.get("concurrent4", {}).get("aggregate_tokens_per_s")),
    ("exact k-NN both ways, N = 500k (s)", f.get("mining", {}).get("seconds")),
    ("  its neighbours = the numpy engine's", f.get("mining", {}).get("same_as_cpu")),
    ("config/gpu-smoke.yaml end to end (s)", steps.get("smoke", {}).get("seconds") if steps.get("smoke", {}).get("rc") == 0 else None),
]
print(f"\n{result['device']}, torch {result['torch']}; figures in {out}")
for what, value in rows:
    if value is None:
        shown = "failed or skipped"
    elif isinstance(value, float):
        shown = f"{value:.4f}" if value < 1 else f"{value:,.1f}"
    else:
        shown = str(value)
    print(f"  {what:<46} {shown}")
for name, s in steps.items():
    if s.get("rc"):
        print(f"  step {name} failed (exit {s['rc']}): see its log in {work}")
train = f.get("training", {}).get("train")
if train:
    print(f"plan.tokens_per_second: {train:.0f}   (config/paper.yaml's plan section; the README's GPU rows)")
EOF
exit "$status"
