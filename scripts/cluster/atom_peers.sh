#!/usr/bin/env bash
# Keeps a run going while peers come and go. Open MPI 4.1 (Debian's) ends the whole job when one of its ranks dies:
# it cannot shrink a communicator around a dead rank (ULFM's MPI_Comm_shrink arrives with Open MPI 5), nor add a
# rank to a running job, so peers leave and join between jobs. This launcher runs
#   LAUNCHER -np N TRIDENT train CONFIG ARGS... --set train.resume=auto
# and, with no person acting:
#   - when the job ends because a rank died (killed by a signal, or gone with its machine: mpirun then exits with a
#     code above 128, or reports it), starts the survivors again, one peer fewer, from the run's newest checkpoint;
#   - when it receives SIGUSR1 (a peer joins: `kill -USR1 PID`), stops the job after its current step with a
#     checkpoint (mpirun forwards SIGUSR1 to every rank) and starts it again with one peer more (at most --max-peers),
#     the new peer loading parameters and AdamW state from that checkpoint as the others do;
# until the run finishes (exit 0), fails on its own (a bad input exits 2, a run error 1: passed through, nothing
# restarted), fewer than --min-peers would remain (exit 3), or SIGTERM stops it (forwarded to the job as a stop with
# a checkpoint). A death costs the steps after the last checkpoint (checkpoint.every at
# parallel.atom.average_every loses at most one averaging round) and a start-up; a join costs a checkpoint and a
# start-up. Checkpoints resume on any peer count.
# Usage: bash scripts/cluster/atom_peers.sh --np N [--min-peers 1] [--max-peers N+4] [--max-restarts N]
#                                           [--launcher "mpirun --oversubscribe"] -- CONFIG [ARGS...]
# TRIDENT names the binary (default build/trident).
set -uo pipefail
die() { echo "cluster/atom_peers.sh: $*" >&2; exit 2; }
np="" min_peers=1 max_peers="" max_restarts="" launcher="mpirun --oversubscribe"
while [[ $# -gt 0 ]]; do
  case $1 in
    --np) np=${2:-}; shift 2 || die "--np needs a number" ;;
    --min-peers) min_peers=${2:-}; shift 2 || die "--min-peers needs a number" ;;
    --max-peers) max_peers=${2:-}; shift 2 || die "--max-peers needs a number" ;;
    --max-restarts) max_restarts=${2:-}; shift 2 || die "--max-restarts needs a number" ;;
    --launcher) launcher=${2:-}; shift 2 || die "--launcher needs a command" ;;
    -h|--help) sed -n '2,22s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
    --) shift; break ;;
    *) die "unknown argument '$1' (allowed: --np, --min-peers, --max-peers, --max-restarts, --launcher, then -- CONFIG ARGS)" ;;
  esac
done
[[ $np =~ ^[1-9][0-9]*$ ]] || die "--np: '$np' is not a positive whole number"
[[ $min_peers =~ ^[1-9][0-9]*$ ]] || die "--min-peers: '$min_peers' is not a positive whole number"
max_restarts=${max_restarts:-$np}
[[ $max_restarts =~ ^[0-9]+$ ]] || die "--max-restarts: '$max_restarts' is not a whole number"
max_peers=${max_peers:-$((np + 4))}
[[ $max_peers =~ ^[1-9][0-9]*$ ]] || die "--max-peers: '$max_peers' is not a positive whole number"
((max_peers >= np)) || die "--max-peers ($max_peers) is below --np ($np)"
(($# >= 1)) || die "no CONFIG: usage: scripts/cluster/atom_peers.sh --np N -- CONFIG [ARGS...]"
trident=${TRIDENT:-build/trident}
[[ -x $trident ]] || die "no trident binary at '$trident' (build it, or set TRIDENT)"
read -r -a launch <<<"$launcher"

peers=$np restarts=0 joining=0 stopping=0 job=""
# A signal interrupts `wait` below; the job itself is told to stop after its step, with a checkpoint.
trap 'if ((peers < max_peers)); then joining=1; [[ -n $job ]] && kill -USR1 "$job" 2>/dev/null; else
        echo "cluster/atom_peers.sh: a peer asks to join, but --max-peers $max_peers are running" >&2; fi' USR1
trap 'stopping=1; [[ -n $job ]] && kill -USR1 "$job" 2>/dev/null' TERM INT
while :; do
  echo "cluster/atom_peers.sh: starting $peers peer(s)" >&2
  "${launch[@]}" -np "$peers" "$trident" train "$@" --set train.resume=auto &
  job=$!
  while :; do
    wait "$job"
    code=$?
    kill -0 "$job" 2>/dev/null && continue  # a trapped signal interrupted the wait, not the job's end
    if ((code > 128)); then  # the job's own status, unless a signal raced its end (then it is still to collect)
      wait "$job" 2>/dev/null
      again=$?
      ((again != 127)) && code=$again
    fi
    break
  done
  job=""
  if ((code == 0)); then
    if ((joining && !stopping)); then
      joining=0 peers=$((peers + 1))
      echo "cluster/atom_peers.sh: a peer joins: restarting $peers peer(s) from the newest checkpoint" >&2
      continue
    fi
    exit 0
  fi
  if ((code == 1 || code == 2)); then
    echo "cluster/atom_peers.sh: the run failed on its own (exit $code): not restarted" >&2
    exit "$code"
  fi
  # anything else: a rank died (a signal, a lost node, or mpirun's own report of it)
  ((stopping)) && exit "$code"
  if ((restarts >= max_restarts)); then
    echo "cluster/atom_peers.sh: a peer died (exit $code) after $restarts restart(s) (--max-restarts): giving up" >&2
    exit "$code"
  fi
  if ((peers - 1 < min_peers)); then
    echo "cluster/atom_peers.sh: a peer died (exit $code); $((peers - 1)) would remain," \
      "below --min-peers $min_peers" >&2
    exit 3
  fi
  peers=$((peers - 1)) restarts=$((restarts + 1))
  echo "cluster/atom_peers.sh: a peer died (exit $code): restarting $peers peer(s) from the newest checkpoint" >&2
done
