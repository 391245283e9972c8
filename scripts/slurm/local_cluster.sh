#!/usr/bin/env bash
# A single-node Slurm cluster on this machine, for tests and for trying scripts/slurm/*.sbatch before a real cluster.
# Everything it starts and writes lives in one directory: its own munged (own key and socket), slurmctld and slurmd,
# with the config, state, spool and logs; nothing under /etc is touched. Needs root (slurmd runs jobs as any user).
#
#   scripts/slurm/local_cluster.sh up     [--dir DIR] [--cpus N]   # start; prints the `export SLURM_CONF=...` line
#   scripts/slurm/local_cluster.sh status [--dir DIR]              # sinfo and the daemons' pids
#   scripts/slurm/local_cluster.sh down   [--dir DIR]              # stop every daemon; safe to repeat, also after a failed up
#
# DIR defaults to /tmp/trident-slurm. The node advertises N CPUs (default 8) whatever the real core count, so jobs of
# several ranks start on a small machine. Ports: TRIDENT_SLURMCTLD_PORT (6817) and TRIDENT_SLURMD_PORT (6818).
set -euo pipefail

usage() { echo "usage: $0 up|down|status [--dir DIR] [--cpus N]" >&2; exit 2; }
[[ $# -ge 1 ]] || usage
action=$1
shift
dir=/tmp/trident-slurm
cpus=8
while [[ $# -gt 0 ]]; do
  case $1 in
    --dir) dir=${2:?--dir needs a value}; shift 2 ;;
    --cpus) cpus=${2:?--cpus needs a value}; shift 2 ;;
    *) echo "local_cluster: unknown argument '$1'" >&2; usage ;;
  esac
done
[[ $cpus =~ ^[1-9][0-9]*$ ]] || { echo "local_cluster: --cpus must be a positive integer, got '$cpus'" >&2; exit 2; }
conf=$dir/slurm.conf

# stop PIDFILE: TERM the daemon named in PIDFILE and wait up to 10 s for it to go, then KILL it.
stop() {
  [[ -s $1 ]] || return 0
  local pid
  pid=$(cat "$1")
  if kill -TERM "$pid" 2>/dev/null; then
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$1"
}

down() {
  # slurmd first (it kills running job steps), then the controller, then munged.
  stop "$dir/slurmd.pid"
  stop "$dir/slurmctld.pid"
  stop "$dir/munge/munged.pid"
}

up() {
  for tool in munged slurmctld slurmd sinfo; do
    command -v "$tool" >/dev/null || { echo "local_cluster: $tool not found; run scripts/install-deps.sh" >&2; exit 1; }
  done
  [[ $(id -u) == 0 ]] || { echo "local_cluster: must run as root (slurmd starts jobs as their user)" >&2; exit 1; }
  if [[ -s $dir/slurmctld.pid ]] && kill -0 "$(cat "$dir/slurmctld.pid")" 2>/dev/null; then
    echo "local_cluster: already up in $dir (run 'down' first)" >&2
    exit 1
  fi
  down  # leftovers of a killed run
  mkdir -p "$dir"/{state,spool,munge/socket}
  # munged insists on a private key and a socket directory everyone can traverse.
  chmod 755 "$dir" "$dir/munge" "$dir/munge/socket"
  if [[ ! -s $dir/munge/munge.key ]]; then
    (umask 077; head -c 1024 /dev/urandom >"$dir/munge/munge.key")
  fi
  local host
  host=$(hostname -s)
  cat >"$conf" <<CONF
# Written by scripts/slurm/local_cluster.sh: a one-node cluster on $host.
ClusterName=trident-local
SlurmctldHost=${host}(127.0.0.1)
SlurmctldPort=${TRIDENT_SLURMCTLD_PORT:-6817}
SlurmdPort=${TRIDENT_SLURMD_PORT:-6818}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# cred_expire also sets how long a requeued job waits before it starts again (default 120 s).
AuthInfo=socket=$dir/munge/socket/munge.socket,cred_expire=10
# Debian's OpenMPI speaks PMIx only.
MpiDefault=pmix
# No cgroup plugins: nothing depends on how the machine mounts cgroups.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
# The node may claim more CPUs than the hardware has.
SlurmdParameters=config_overrides
MailProg=/bin/true
# A request larger than the node fails at once instead of waiting forever.
EnforcePartLimits=ALL
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
  munged --socket="$dir/munge/socket/munge.socket" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed"
  munge -S "$dir/munge/socket/munge.socket" -n | unmunge -S "$dir/munge/socket/munge.socket" >/dev/null
  slurmctld -f "$conf"
  slurmd -f "$conf"
  export SLURM_CONF=$conf
  for _ in $(seq 1 100); do
    [[ $(sinfo -h -o %t 2>/dev/null) == idle ]] && break
    sleep 0.2
  done
  if [[ $(sinfo -h -o %t 2>/dev/null) != idle ]]; then
    echo "local_cluster: the node did not become idle within 20 s; the daemons' logs end with:" >&2
    tail -n 20 "$dir"/slurmctld.log "$dir"/slurmd.log >&2 || true
    down
    exit 1
  fi
  echo "local_cluster: up ($host, $cpus CPUs); for srun, sbatch, squeue: export SLURM_CONF=$conf"
}

status() {
  [[ -f $conf ]] || { echo "local_cluster: no cluster in $dir"; return 0; }
  for daemon in munge/munged slurmctld slurmd; do
    local pidfile=$dir/$daemon.pid
    if [[ -s $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
      echo "${daemon#munge/}: running (pid $(cat "$pidfile"))"
    else
      echo "${daemon#munge/}: stopped"
    fi
  done
  SLURM_CONF=$conf sinfo 2>/dev/null || true
}

case $action in
  up) up ;;
  down) down; echo "local_cluster: down ($dir)" ;;
  status) status ;;
  *) usage ;;
esac
