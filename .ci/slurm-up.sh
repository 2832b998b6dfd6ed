#!/usr/bin/env bash
# Start a real single-node SLURM cluster here, without systemd, for tests/slurm/test_slurm.py.
#
#   bash .ci/slurm-up.sh [STATE_DIR]      (default: a new /tmp/lem-slurm.XXXXXX)
#   export SLURM_CONF=STATE_DIR/slurm.conf
#   ...                                    sinfo, sbatch, snakemake --executor slurm
#   bash .ci/slurm-down.sh STATE_DIR
#
# Installs Debian's slurm-wlm and munge when missing, writes slurm.conf, gres.conf and cgroup.conf into
# STATE_DIR, starts munged (as the munge user, unless one already answers), slurmctld -D and
# slurmd -D -N localhost in the background, and waits until the node `localhost` is idle. The node has
# the machine's CPUs, 90 % of its memory and one fake GPU (gres File=/dev/null) so that jobs asking for
# `--gpus=1` schedule. PIDs of what it started go to STATE_DIR/pids (read by slurm-down.sh); the last
# line on stdout is `export SLURM_CONF=...`. Everything is logged into STATE_DIR/*.log.
# Ports: LEM_SLURMCTLD_PORT (6817) and LEM_SLURMD_PORT (6818).
set -euo pipefail

STATE_DIR="${1:-}"
if [ -z "$STATE_DIR" ]; then
  STATE_DIR="$(mktemp -d /tmp/lem-slurm.XXXXXX)"
fi
mkdir -p "$STATE_DIR"
STATE_DIR="$(cd "$STATE_DIR" && pwd)"
CTLD_PORT="${LEM_SLURMCTLD_PORT:-6817}"
SLURMD_PORT="${LEM_SLURMD_PORT:-6818}"
PIDS="$STATE_DIR/pids"
: >"$PIDS"

log() { echo "slurm-up: $*" >&2; }
fail() {
  log "ERROR: $*"
  for f in munged.log slurmctld.log slurmctld.out slurmd.log slurmd.out; do
    if [ -s "$STATE_DIR/$f" ]; then
      echo "--- $STATE_DIR/$f (last lines)" >&2
      tail -n 20 "$STATE_DIR/$f" >&2
    fi
  done
  # Stop whatever this run started already (by PID), keeping STATE_DIR and its logs.
  bash "$(dirname "${BASH_SOURCE[0]}")/slurm-down.sh" "$STATE_DIR" --keep || true
  exit 1
}

# 1. Packages (root only; a developer machine that already has them skips this).
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null \
  || ! command -v sinfo >/dev/null; then
  [ "$(id -u)" -eq 0 ] || fail "slurm-wlm and munge are missing and only root can install them"
  log "installing slurm-wlm and munge (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >"$STATE_DIR/apt.log" 2>&1 || fail "apt-get update failed (see $STATE_DIR/apt.log)"
  apt-get install -y -q --no-install-recommends slurm-wlm munge >>"$STATE_DIR/apt.log" 2>&1 \
    || fail "apt-get install slurm-wlm munge failed (see $STATE_DIR/apt.log)"
fi

# 2. munge: the key is made by the package; the daemon runs as the munge user.
if [ ! -s /etc/munge/munge.key ]; then
  log "creating /etc/munge/munge.key"
  if command -v mungekey >/dev/null; then
    mungekey --create --keyfile /etc/munge/munge.key
  else
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
  fi
  chown munge:munge /etc/munge/munge.key
  chmod 400 /etc/munge/munge.key
fi
if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  log "munged already running: reusing it"
else
  install -d -o munge -g munge -m 0755 /run/munge
  install -d -o munge -g munge -m 0700 /var/lib/munge /var/log/munge
  setpriv --reuid=munge --regid=munge --init-groups /usr/sbin/munged --foreground \
    >>"$STATE_DIR/munged.log" 2>&1 &
  echo "munged $!" >>"$PIDS"
  for _ in $(seq 1 50); do
    if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then break; fi
    sleep 0.1
  done
  munge -n 2>/dev/null | unmunge >/dev/null 2>&1 || fail "munged did not come up"
fi

# 3. Configuration: one node `localhost`, one fake GPU, no accounting, no cgroups, no systemd.
CPUS="$(nproc)"
MEM_MB="$(awk '/^MemTotal:/ {printf "%d", $2 / 1024 * 0.9}' /proc/meminfo)"
mkdir -p "$STATE_DIR/state" "$STATE_DIR/spool"
cat >"$STATE_DIR/slurm.conf" <<EOF
# Written by .ci/slurm-up.sh: a single-node test cluster.
ClusterName=lemtest
SlurmctldHost=$(hostname -s)(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$STATE_DIR/state
SlurmdSpoolDir=$STATE_DIR/spool
SlurmctldPidFile=$STATE_DIR/slurmctld.pid
SlurmdPidFile=$STATE_DIR/slurmd.pid
SlurmctldLogFile=$STATE_DIR/slurmctld.log
SlurmdLogFile=$STATE_DIR/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
# Keep finished jobs visible to squeue (the executor's status command here) and scontrol for 30 min.
MinJobAge=1800
SlurmdTimeout=300
InactiveLimit=0
KillWait=10
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$MEM_MB Gres=gpu:1 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
cat >"$STATE_DIR/gres.conf" <<EOF
# One fake GPU: enough for the scheduler to place jobs that ask for --gpus=1 / --gres=gpu:1.
NodeName=localhost Name=gpu Count=1 File=/dev/null
EOF
cat >"$STATE_DIR/cgroup.conf" <<EOF
# No cgroup plugins are configured (proctrack/linuxproc, task/none); this file only keeps slurmd quiet.
CgroupPlugin=autodetect
IgnoreSystemd=yes
EOF
export SLURM_CONF="$STATE_DIR/slurm.conf"
# The executor's job step (snakemake-executor-plugin-slurm-jobstep 0.6.1) drops every SLURM_* variable,
# SLURM_CONF included, before its nested `srun`, which then only finds the default /etc/slurm/slurm.conf.
# Link it there unless a real configuration is in the way (slurm-down.sh removes only our link).
SYS_CONF=/etc/slurm/slurm.conf
if [ -L "$SYS_CONF" ] && [ ! -e "$SYS_CONF" ]; then
  rm -f "$SYS_CONF" # a dangling link left by an earlier run
fi
if [ -e "$SYS_CONF" ] || [ -L "$SYS_CONF" ]; then
  if [ "$(readlink -f "$SYS_CONF")" != "$SLURM_CONF" ]; then
    fail "$SYS_CONF exists and is not ours: jobs would reach that cluster (move it, or stop the cluster it belongs to)"
  fi
else
  mkdir -p /etc/slurm
  ln -s "$SLURM_CONF" "$SYS_CONF"
  echo "link $SYS_CONF" >>"$PIDS"
fi

# 4. Daemons, in the foreground of background jobs, so their PIDs are known exactly.
slurmctld -D -c -f "$SLURM_CONF" >>"$STATE_DIR/slurmctld.out" 2>&1 &
echo "slurmctld $!" >>"$PIDS"
for _ in $(seq 1 100); do
  if scontrol ping >/dev/null 2>&1; then break; fi
  kill -0 "$(awk '$1 == "slurmctld" {print $2}' "$PIDS")" 2>/dev/null || fail "slurmctld exited"
  sleep 0.1
done
scontrol ping >/dev/null 2>&1 || fail "slurmctld does not answer"
slurmd -D -N localhost -f "$SLURM_CONF" >>"$STATE_DIR/slurmd.out" 2>&1 &
echo "slurmd $!" >>"$PIDS"

state=""
for _ in $(seq 1 300); do
  state="$(sinfo -h -n localhost -o %T 2>/dev/null || true)"
  case "$state" in
    idle | mixed | allocated) break ;;
  esac
  kill -0 "$(awk '$1 == "slurmd" {print $2}' "$PIDS")" 2>/dev/null || fail "slurmd exited"
  sleep 0.1
done
case "$state" in
  idle | mixed | allocated) ;;
  *) fail "node localhost is not idle (state: ${state:-unknown}); scontrol says: $(scontrol show node localhost 2>&1 | tr '\n' ' ')" ;;
esac
log "node localhost is $state ($CPUS CPUs, $MEM_MB MB, gpu:1); pids: $(tr '\n' ' ' <"$PIDS")"
echo "export SLURM_CONF=$SLURM_CONF"
