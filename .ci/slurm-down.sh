#!/usr/bin/env bash
# Stop what .ci/slurm-up.sh started, by the PIDs it wrote to STATE_DIR/pids (never by name).
#
#   bash .ci/slurm-down.sh STATE_DIR [--keep]
#
# Cancels jobs still in the queue, stops slurmd, then slurmctld, then munged (SIGTERM, then SIGKILL
# after 10 s), and removes STATE_DIR unless --keep is given. Safe to call twice or when nothing started.
set -uo pipefail

STATE_DIR="${1:?usage: slurm-down.sh STATE_DIR [--keep]}"
KEEP="${2:-}"
PIDS="$STATE_DIR/pids"
log() { echo "slurm-down: $*" >&2; }

if [ ! -f "$PIDS" ]; then
  log "no $PIDS: nothing to stop"
  exit 0
fi

if [ -f "$STATE_DIR/slurm.conf" ] && command -v scancel >/dev/null; then
  SLURM_CONF="$STATE_DIR/slurm.conf" timeout 10 scancel --full --quiet --user="$(id -un)" 2>/dev/null || true
fi

stop() {
  local name="$1" pid
  pid="$(awk -v n="$name" '$1 == n {print $2}' "$PIDS")"
  [ -n "$pid" ] || return 0
  if ! kill -0 "$pid" 2>/dev/null; then
    log "$name ($pid) already gone"
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "$name ($pid) ignored SIGTERM: SIGKILL"
    kill -KILL "$pid" 2>/dev/null
  fi
  wait "$pid" 2>/dev/null || true
  log "stopped $name ($pid)"
}

stop slurmd
stop slurmctld
stop munged

# The /etc/slurm/slurm.conf link slurm-up.sh made, if it still points into STATE_DIR.
link="$(awk '$1 == "link" {print $2}' "$PIDS")"
if [ -n "$link" ] && [ -L "$link" ] && [ "$(readlink "$link")" = "$STATE_DIR/slurm.conf" ]; then
  rm -f "$link"
  log "removed $link"
fi

if [ "$KEEP" = "--keep" ]; then
  log "kept $STATE_DIR"
else
  rm -rf -- "$STATE_DIR"
fi
exit 0
