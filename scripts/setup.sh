#!/usr/bin/env bash
# Create (or update) the project's environment in .venv: Python 3.11, the CPU build of PyTorch 2.13.0,
# and the pinned stack of pyproject.toml. Idempotent; safe to run before every command.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3
"$PY" -c 'import sys; assert sys.version_info[:2] == (3, 11), f"Python 3.11 is required, found {sys.version}"'
[ -x .venv/bin/python ] || "$PY" -m venv .venv
stamp=.venv/.lem-installed
want=$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  # torch first and exactly: a loose requirement would pull a multi-GB CUDA build.
  .venv/bin/python -m pip install --quiet "torch==2.13.0"
  .venv/bin/python -m pip install --quiet -e ".[test]"
  echo "$want" > "$stamp"
fi
echo "environment ready: $(pwd)/.venv"
