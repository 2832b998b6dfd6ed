#!/usr/bin/env bash
# One command for a lent GPU machine: the figures the README's GPU rows, `plan.tokens_per_second` and
# `plan.shared_tokens_per_second` need, within a time budget, every figure written as soon as it is measured.
#
#   bash scripts/gpu-check.sh [--quick] [--budget SECONDS] [--fresh] [RESULTS.jsonl]
#
# Budget: 480 s of wall time by default (a lent machine gives a task about 15 minutes, its start-up
# included), 240 s with --quick. Steps, in priority order, each under its own time limit (cut to what is
# left of the budget; a step that no longer fits is recorded as skipped):
#   training        bench/gpu_training.py: the training stage eager vs static shapes (the GPU's default
#                   path), batch 32, one job, both in the same call on the same card
#   concurrent2/4   bench/gpu_training.py --concurrent 2, then 4: the aggregate tokens/s of jobs sharing the
#                   GPU (resources.gpu_share; plan.shared_tokens_per_second)
#   mining          bench/mining.py --device cuda: the exact k-NN both ways at N = 500k per side
#   (not --quick:)
#   syncs           host synchronisations per training step, eager vs static (torch's sync debug mode)
#   compile-reduce-overhead   the training stage with compile: reduce-overhead (CUDA graphs)
#   concurrent2-mps, concurrent4-mps   the concurrency steps under the CUDA MPS daemon, where it can be started
#   compile-default the training stage with compile: default
#   smoke           config/gpu-smoke.yaml end to end, resumed from what an earlier call finished
# Every figure is appended to RESULTS.jsonl (default $OUT/gpu-check.jsonl where $OUT is set, else
# ./gpu-check.jsonl) the moment it is measured, one JSON object a line, so a call cut short still returns
# the figures it got; each step adds a line with its exit status and seconds, and its log's tail goes to
# RESULTS.logs/. Steps finished by an earlier call on the same machine (state in $LEM_GPU_CHECK_STATE,
# default /tmp/lem-gpu-check; --fresh forgets it) are not run again: their figures are copied in, so the next
# call goes on with the next steps and the smoke DAG where it stopped.
# Without a GPU it stops at once, one line on stderr, exit 2, nothing written. Python: .venv/bin/python if
# there is one, else python3 (a machine's own PyTorch image: ../shared/docs/gpu.md); wheels in .gpu/whl are
# installed once into the state folder. LEM_GPU_CHECK_SKIP="smoke mining ..." leaves steps out.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)  # the budget counts from here: setting up the Python path and wheels included

usage_error() {  # one line naming what is wrong, exit 64 (a usage error), before anything is started
  echo "scripts/gpu-check.sh: $1" >&2
  exit 64
}
QUICK=0
BUDGET=""
BUDGET_SET=0
FRESH=0
RESULTS=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1 ;;
    --budget)
      [ $# -ge 2 ] || usage_error "--budget needs a value: --budget SECONDS"
      BUDGET="$2"; BUDGET_SET=1; shift ;;
    --budget=*) BUDGET="${1#--budget=}"; BUDGET_SET=1 ;;
    --fresh) FRESH=1 ;;
    -h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d'; exit 0 ;;
    -*) usage_error "unknown option $1 (--quick, --budget SECONDS, --fresh, RESULTS.jsonl)" ;;
    *) RESULTS="$1" ;;
  esac
  shift
done
if [ "$BUDGET_SET" -eq 1 ]; then
  case "$BUDGET" in
    "" | *[!0-9]* | 0) usage_error "--budget: expected a whole number of seconds > 0, got '$BUDGET'" ;;
  esac
fi

no_gpu() {
  echo "scripts/gpu-check.sh: no GPU here ($1); run it on a GPU node" >&2
  exit 2
}
case "${CUDA_VISIBLE_DEVICES-unset}" in
  "" | "-1") no_gpu "CUDA_VISIBLE_DEVICES='${CUDA_VISIBLE_DEVICES}' hides every GPU" ;;
esac
command -v nvidia-smi > /dev/null 2>&1 || no_gpu "no nvidia-smi"
nvidia-smi -L 2> /dev/null | grep -q "^GPU " || no_gpu "nvidia-smi lists no GPU"

PY=$(command -v python3)
[ -x .venv/bin/python ] && PY="$PWD/.venv/bin/python"  # absolute: the smoke DAG's jobs run in its folder
"$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2> /dev/null \
  || no_gpu "$PY's torch sees no CUDA device"
STATE="${LEM_GPU_CHECK_STATE:-/tmp/lem-gpu-check}"
[ "$FRESH" -eq 1 ] && rm -rf "$STATE"
mkdir -p "$STATE/done" "$STATE/logs" "$STATE/bin"
if ls .gpu/whl/*.whl > /dev/null 2>&1 && [ ! -e "$STATE/site.ok" ]; then
  "$PY" -m pip install -q --no-index --no-deps --target "$STATE/site" .gpu/whl/*.whl && touch "$STATE/site.ok"
fi
export PYTHONPATH="$STATE/site:$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
export HF_HUB_OFFLINE=1
for tool in lem snakemake; do  # the rules call `lem`; snakemake as a module where it is not installed
  if ! command -v "$tool" > /dev/null 2>&1; then
    mod=$([ "$tool" = lem ] && echo lem.cli || echo snakemake)
    printf '#!/bin/sh\nexec %s -m %s "$@"\n' "$PY" "$mod" > "$STATE/bin/$tool"
    chmod +x "$STATE/bin/$tool"
  fi
done
export PATH="$STATE/bin:$PATH"

# what the benches and the smoke DAG import beyond the machine's PyTorch image (../shared/docs/gpu.md)
MISSING=$("$PY" -c 'import importlib.util as u; print(" ".join(m for m in ("transformers", "datasets", "snakemake", "jsonschema", "faiss") if u.find_spec(m) is None))' 2> /dev/null)
[ -n "$MISSING" ] && echo "== missing modules: $MISSING (bring wheels in .gpu/whl: ../shared/docs/gpu.md); the steps that need them will fail"
[ -n "$BUDGET" ] || BUDGET=$([ "$QUICK" -eq 1 ] && echo 240 || echo 480)
RESULTS="${RESULTS:-${OUT:-.}/gpu-check.jsonl}"
LOGS="${RESULTS%.jsonl}.logs"
mkdir -p "$(dirname "$RESULTS")" "$LOGS"
SKIP=" ${LEM_GPU_CHECK_SKIP:-} "
RESERVE=20  # seconds kept for the kill grace of the last step and the summary
status=0

"$PY" - "$RESULTS" "$BUDGET" "$QUICK" "$MISSING" << 'EOF'
import json, subprocess, sys, torch
smi = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.strip().splitlines()
rec = {"what": "device", "name": torch.cuda.get_device_name(0), "torch": torch.__version__,
       "cuda": torch.version.cuda, "nvidia_smi": smi, "budget_s": int(sys.argv[2]), "quick": sys.argv[3] == "1",
       "missing_modules": sys.argv[4].split()}
with open(sys.argv[1], "a") as fh:
    fh.write(json.dumps(rec) + "\n")
print(f"== {rec['name']}, torch {rec['torch']}; budget {rec['budget_s']} s; figures in {sys.argv[1]}")
EOF

record() {  # record STEP RC SECONDS LIMIT [NOTE]
  printf '{"what": "step", "step": "%s", "rc": %s, "seconds": %s, "limit_s": %s, "note": "%s"}\n' \
    "$1" "$2" "$3" "$4" "${5:-}" >> "$RESULTS"
}

step() {  # step NAME LIMIT_S MIN_S COMMAND...: run it within the budget; its figures go to $RESULTS itself
  local name="$1" limit="$2" min="$3"
  shift 3
  if [[ "$SKIP" == *" $name "* ]]; then
    record "$name" null 0 0 "skipped (LEM_GPU_CHECK_SKIP)"
    return
  fi
  if [ -f "$STATE/done/$name" ]; then  # finished by an earlier call on this machine: its figures again
    sed 's/^{/{"from_earlier_call": true, /' "$STATE/done/$name" >> "$RESULTS"
    echo "== $name: done by an earlier call (figures copied)"
    return
  fi
  local left=$((BUDGET - ($(date +%s) - T0) - RESERVE))
  [ "$left" -lt "$limit" ] && limit=$left
  if [ "$limit" -lt "$min" ]; then
    record "$name" null 0 "$limit" "skipped: ${limit} s left of the budget, the step needs ${min} s at least"
    echo "== $name: skipped (${limit} s left of the budget)"
    return
  fi
  echo "== $name: at most ${limit} s: $*"
  local before t0 rc
  before=$(wc -l < "$RESULTS")
  t0=$(date +%s)
  timeout -s INT -k 10 "$limit" "$@" > "$STATE/logs/$name.log" 2>&1
  rc=$?
  local seconds=$(($(date +%s) - t0))
  tail -n 200 "$STATE/logs/$name.log" > "$LOGS/$name.log"
  tail -n +"$((before + 1))" "$RESULTS" | grep -v '"what": "step"' > "$STATE/$name.figures"
  local note=""
  if [ "$rc" -eq 0 ]; then
    mv "$STATE/$name.figures" "$STATE/done/$name"
  else
    case "$rc" in 124 | 130 | 137) note="cut at its limit" ;; 3) note="unavailable" ;; *) note="failed" ;; esac
    [ "$rc" -eq 3 ] || status=1
    echo "   $name: $note (exit $rc); tail of its log:"
    tail -n 5 "$STATE/logs/$name.log" | sed 's/^/   | /'
  fi
  record "$name" "$rc" "$seconds" "$limit" "$note"
}

BENCH=("$PY" bench/gpu_training.py --results "$RESULTS" --workers 2)  # the paper config's dataloader_num_workers
mining_run() {  # bench/mining.py writes one JSON file: its figures appended to $RESULTS once measured
  rm -f "$STATE/mining.json"
  "$PY" bench/mining.py --device cuda --json "$STATE/mining.json" || return $?
  "$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); open(sys.argv[2], "a").write(json.dumps({"what": "mining", **d}) + "\n")' \
    "$STATE/mining.json" "$RESULTS"
}
export -f mining_run
export PY STATE RESULTS
if [ "$QUICK" -eq 1 ]; then
  step training 100 60 "${BENCH[@]}" --modes eager,static --steps 40
  step concurrent2 60 40 "${BENCH[@]}" --concurrent 2 --mode static --steps 40
  step concurrent4 70 45 "${BENCH[@]}" --concurrent 4 --mode static --steps 40
  step mining 60 40 bash -c mining_run
else
  step training 120 60 "${BENCH[@]}" --modes eager,static --steps 60
  step concurrent2 75 45 "${BENCH[@]}" --concurrent 2 --mode static --steps 60
  step concurrent4 100 60 "${BENCH[@]}" --concurrent 4 --mode static --steps 60
  step mining 90 40 bash -c mining_run
  step syncs 90 50 "${BENCH[@]}" --modes eager,static --steps 20 --warm 5 --count-syncs
  # compiling the 12-layer model takes minutes (train and eval graphs): its own steps, after the above
  step compile-reduce-overhead 180 120 "${BENCH[@]}" --modes compile-reduce-overhead --steps 60
  step concurrent2-mps 75 45 "${BENCH[@]}" --concurrent 2 --mode static --steps 60 --mps
  if grep -q '"mps": "unavailable"' "$STATE/logs/concurrent2-mps.log" "$RESULTS" 2> /dev/null; then
    record concurrent4-mps null 0 0 "skipped: MPS unavailable"
  else
    step concurrent4-mps 100 60 "${BENCH[@]}" --concurrent 4 --mode static --steps 60 --mps
  fi
  step compile-default 180 120 "${BENCH[@]}" --modes compile-default --steps 60
  smoke_run() {  # resumed where an earlier call stopped: its outputs are kept, a half-written one is redone
    local smoke=("$PY" -m snakemake --snakefile "$PWD/Snakefile" --configfile "$PWD/config/gpu-smoke.yaml"
      --directory "$STATE/gpu-smoke" --cores all --resources gpu=1)
    "${smoke[@]}" --unlock > /dev/null 2>&1  # a call cut short leaves the folder locked
    "${smoke[@]}" --rerun-incomplete --keep-going
  }
  export -f smoke_run
  step smoke 3600 60 bash -c smoke_run
  # how far the smoke DAG got (over all calls): snakemake's last progress line
  "$PY" - "$RESULTS" "$STATE/logs/smoke.log" << 'EOF'
import json, re, sys
from pathlib import Path
log = Path(sys.argv[2])
lines = re.findall(r"(\d+) of (\d+) steps \((\d+)%\) done", log.read_text(errors="replace")) if log.is_file() else []
if lines:
    done, total, _ = lines[-1]
    with open(sys.argv[1], "a") as fh:
        fh.write(json.dumps({"what": "smoke", "jobs_done_this_call": int(done), "jobs_this_call": int(total)}) + "\n")
EOF
fi

"$PY" - "$RESULTS" << 'EOF'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
dev = next((r for r in reversed(recs) if r.get("what") == "device"), {})
print(f"\n{dev.get('name', '?')}, torch {dev.get('torch', '?')}: figures in {sys.argv[1]}")
train = {r["mode"]: r for r in recs if r.get("what") == "training"}
for mode, r in train.items():
    print(f"  training stage, batch {r['batch_size']}, {mode:<24} {r['tokens_per_s']:>12,.0f} tokens/s  MFU {r['mfu']:.3f}")
for r in recs:
    if r.get("what") == "concurrent" and "aggregate_tokens_per_s" in r:
        print(f"  {r['concurrent']} jobs on the GPU ({r['mode']}, MPS {r['mps']}): aggregate "
              f"{r['aggregate_tokens_per_s']:,.0f} tokens/s, {r['per_job_tokens_per_s']:,.0f} per job")
    elif r.get("what") == "concurrent":
        print(f"  {r['concurrent']} jobs under MPS: unavailable ({r.get('why')})")
    elif r.get("what") == "syncs":
        print(f"  host synchronisations per training step, {r['mode']:<10} {r['syncs_per_step']:.1f}")
    elif r.get("what") == "mining":
        print(f"  exact k-NN both ways, N = {r.get('n'):,}: {r.get('seconds')} s (neighbours as numpy's: {r.get('same_as_cpu')})")
    elif r.get("what") == "smoke":
        print(f"  smoke DAG: {r['jobs_done_this_call']} of {r['jobs_this_call']} jobs left at the call's start done")
    elif r.get("what") == "step" and r.get("note"):
        print(f"  step {r['step']}: {r['note']}" + (f" (exit {r['rc']})" if r.get("rc") is not None else ""))
fast = max((r for m, r in train.items() if m != "bare"), key=lambda r: r["tokens_per_s"], default=None)
if fast:
    print(f"plan.tokens_per_second: {fast['tokens_per_s']:.0f} (mode {fast['mode']} on {dev.get('name')}; a compile-* "
          "mode is the pipeline's rate only with training.compile set to it)")
EOF
echo "== $(($(date +%s) - T0)) s of the ${BUDGET}-s budget"
exit "$status"
