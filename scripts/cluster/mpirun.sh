#!/usr/bin/env bash
# mpirun with Trident's stop contract for the whole job: SIGTERM or SIGINT sent to this script stop every rank after
# its step, with a checkpoint, and the script exits with mpirun's code (0). Open MPI's mpirun treats a SIGTERM sent to
# mpirun itself as an abort: the ranks still stop cleanly and checkpoint, but mpirun exits 1. It forwards SIGUSR1 to
# the ranks, so this script turns the signals it receives into SIGUSR1 to mpirun, which runs in a session of its own
# (a terminal's Ctrl-C reaches this script only).
#   bash scripts/cluster/mpirun.sh [MPIRUN OPTIONS...] build/trident train CONFIG [--set KEY=VALUE ...]
set -u
(($#)) || { echo "cluster/mpirun.sh: usage: bash scripts/cluster/mpirun.sh [MPIRUN OPTIONS...] PROGRAM [ARGS...]" >&2
            exit 2; }
setsid mpirun "$@" &
job=$!
stop() { kill -USR1 "$job" 2>/dev/null; }
trap stop TERM INT
while kill -0 "$job" 2>/dev/null; do wait "$job"; done  # a trapped signal ends a wait early: wait again
wait "$job"
