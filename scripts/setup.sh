#!/usr/bin/env bash
# Create (or update) the project's environment in .venv: Python 3.11 to 3.13 (3.11 preferred), PyTorch
# 2.13.0, and the pinned stack of pyproject.toml. Idempotent; safe to run before every command.
# PYTHON=python3.12 picks the interpreter; otherwise the first of python3.11, python3.12, python3.13,
# python3 that runs and is 3.11-3.13.
set -euo pipefail
cd "$(dirname "$0")/.."
supported='import sys; sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 13))'
if [ -n "${PYTHON:-}" ]; then
  PY=$PYTHON
else
  PY=
  for cand in python3.11 python3.12 python3.13 python3; do
    # `command -v` is not enough: a pyenv shim exists for versions it will refuse to run
    if "$cand" -c "$supported" >/dev/null 2>&1; then PY=$cand; break; fi
  done
  [ -n "$PY" ] || { echo "setup.sh: Python 3.11, 3.12 or 3.13 is required (none found; set PYTHON)" >&2; exit 1; }
fi
"$PY" -c "$supported" || { echo "setup.sh: Python 3.11 to 3.13 is required, $PY is $("$PY" -V 2>&1)" >&2; exit 1; }
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -c "$supported" || {
  echo "setup.sh: .venv has $(.venv/bin/python -V 2>&1); 3.11 to 3.13 is required (remove .venv)" >&2
  exit 1
}
stamp=.venv/.lem-installed
want=$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  # torch first and exactly: a loose requirement would pull a multi-GB CUDA build. The CPU wheel
  # 2.13.0+cpu is taken when pip can see it (a find-links folder, or the PyTorch CPU index as an extra
  # index: it sorts above 2.13.0); otherwise PyPI's 2.13.0, on Linux the CUDA build (it runs on CPU too).
  .venv/bin/python -m pip install --quiet "torch==2.13.0"
  # the whole stack: the light base (planning, reports, data preparation) and its extras
  .venv/bin/python -m pip install --quiet -e ".[train,workflow,test]"
  echo "$want" > "$stamp"
fi
echo "environment ready: $(pwd)/.venv"
