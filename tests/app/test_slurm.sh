#!/usr/bin/env bash
# Trident under a real Slurm: brings up a single-node cluster (scripts/slurm/local_cluster.sh: munged, slurmctld,
# slurmd, all in a temporary directory), then
#  - `srun -n 2` trains with the same losses as `mpirun -np 2`;
#  - `sbatch scripts/slurm/train.sbatch` does too, and the job ends COMPLETED with exit 0;
#  - USR1 to the batch script (what --signal=B:USR1@T sends before the time limit) makes the ranks checkpoint and
#    exit 0, the script requeues the job, and the requeued job resumes and finishes: one unbroken loss curve;
#  - a failing run makes the job FAILED with trident's exit code;
# and takes the cluster down again, also when a check fails. Every wait has a deadline, so nothing hangs.
# Needs root and the Slurm packages (scripts/install-deps.sh).
# Usage: TRIDENT=/path/to/trident bash tests/app/test_slurm.sh tests/app/configs
set -u
if [[ $(id -u) != 0 ]]; then echo "skipped: the local Slurm cluster needs root"; exit 77; fi
configs=${1:?usage: TRIDENT=/path/to/trident bash test_slurm.sh CONFIG_DIR}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cluster="$root/scripts/slurm/local_cluster.sh"
trap 'bash "$cluster" down --dir "$tmp/slurm" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
mpirun_env
trident=$(realpath "$trident")
export TRIDENT=$trident  # train.sbatch runs it
tiny=$(realpath "$configs/tiny_train.yaml")
base=(--set train.eval_every=0 --set train.warmup_steps=2 --set checkpoint.keep=2 --set parallel.strategy=dp)

# check DESCRIPTION: numbers and prints the next check.
check() { checks=$((checks + 1)); echo "check $checks: $*"; }

# same_losses A B: two runs' losses are identical step by step (same rank count, same arithmetic).
same_losses() {
  /usr/bin/python3 - "$1/metrics.jsonl" "$2/metrics.jsonl" <<'PY' || fail "losses of $1 and $2 differ"
import json, sys
a, b = ([json.loads(l)["loss"] for l in open(p)] for p in sys.argv[1:3])
assert a == b and a, (a, b)
PY
}

# job_field JOB FIELD: one field of `scontrol show job` (JobState, ExitCode, Restarts, ...).
job_field() { scontrol show job "$1" 2>/dev/null | grep -oE "(^| )$2=[^ ]*" | head -n 1 | cut -d= -f2; }

# wait_job JOB SECONDS: waits until the job has ended, at most SECONDS; prints its final state.
wait_job() {
  local state
  for _ in $(seq 1 $(($2 * 5))); do
    state=$(job_field "$1" JobState)
    case $state in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY) echo "$state"; return ;; esac
    sleep 0.2
  done
  scancel "$1" 2>/dev/null
  fail "job $1 did not end within $2 s (state ${state:-unknown})"
}

check "a single-node Slurm comes up"
chmod 755 "$tmp"  # munged wants every directory above its socket traversable
timeout 60 bash "$cluster" up --dir "$tmp/slurm" >"$tmp/out" 2>"$tmp/err" || fail "local_cluster.sh up failed"
export SLURM_CONF=$tmp/slurm/slurm.conf
cd "$tmp"

check "srun -n 2 gives the losses of mpirun -np 2"
timeout 120 mpirun -np 2 "$trident" train "$tiny" "${base[@]}" --set train.steps=8 --set run.dir="$tmp/mpirun" \
  >"$tmp/out" 2>"$tmp/err" || fail "mpirun -np 2 failed"
timeout 120 srun -n 2 "$trident" train "$tiny" "${base[@]}" --set train.steps=8 --set run.dir="$tmp/srun" \
  >"$tmp/out" 2>"$tmp/err" || fail "srun -n 2 failed"
grep -q '"world_size":2' "$tmp/srun/metrics.jsonl" || fail "srun did not start a 2-rank world"
same_losses "$tmp/mpirun" "$tmp/srun"

check "sbatch scripts/slurm/train.sbatch completes with the same losses"
job=$(sbatch --parsable -o "$tmp/batch.out" "$root/scripts/slurm/train.sbatch" "$tiny" "${base[@]}" \
  --set train.steps=8 --set run.dir="$tmp/batch") || fail "sbatch refused the job"
state=$(wait_job "$job" 120)
cp "$tmp/batch.out" "$tmp/out" 2>/dev/null
[[ $state == COMPLETED && $(job_field "$job" ExitCode) == 0:0 ]] || fail "job $job ended $state, exit $(job_field "$job" ExitCode)"
same_losses "$tmp/mpirun" "$tmp/batch"

check "USR1 before the time limit: checkpoint, requeue, resume, finish"
steps=400
job=$(sbatch --parsable -o "$tmp/requeue.out" "$root/scripts/slurm/train.sbatch" "$tiny" "${base[@]}" \
  --set train.steps=$steps --set run.dir="$tmp/requeue") || fail "sbatch refused the job"
for _ in $(seq 1 300); do [[ -s $tmp/requeue/metrics.jsonl ]] && break; sleep 0.1; done
[[ -s $tmp/requeue/metrics.jsonl ]] || { scancel "$job"; fail "job $job logged no step within 30 s"; }
scancel --batch --signal=USR1 "$job"
state=$(wait_job "$job" 240)
cp "$tmp/requeue.out" "$tmp/out" 2>/dev/null
[[ $state == COMPLETED && $(job_field "$job" ExitCode) == 0:0 ]] || fail "job $job ended $state"
[[ $(job_field "$job" Restarts) == 1 ]] || fail "job $job restarted $(job_field "$job" Restarts) times, expected 1"
grep -q "requeueing job $job" "$tmp/requeue.out" || fail "the batch script did not requeue the job"
grep -q "resuming from" "$tmp/requeue/trident.log" || fail "the requeued job did not resume"
/usr/bin/python3 - "$tmp/requeue/metrics.jsonl" "$steps" <<'PY' || fail "the requeued run's steps are not 0..$steps once each"
import json, sys
steps = [json.loads(l)["step"] for l in open(sys.argv[1])]
assert steps == list(range(int(sys.argv[2]))), steps
PY

check "a failing run fails the job with trident's exit code"
job=$(sbatch --parsable -o "$tmp/bad.out" "$root/scripts/slurm/train.sbatch" "$tmp/no_such_config.yaml") \
  || fail "sbatch refused the job"
state=$(wait_job "$job" 120)
cp "$tmp/bad.out" "$tmp/out" 2>/dev/null
[[ $state == FAILED && $(job_field "$job" ExitCode) == 2:0 ]] || fail "job $job ended $state, exit $(job_field "$job" ExitCode)"
grep -q "no_such_config.yaml" "$tmp/bad.out" || fail "the job's output does not name the missing config"

check "the cluster goes down and leaves no daemon behind"
pids=$(cat "$tmp"/slurm/slurmd.pid "$tmp"/slurm/slurmctld.pid "$tmp"/slurm/munge/munged.pid)
timeout 60 bash "$cluster" down --dir "$tmp/slurm" >"$tmp/out" 2>"$tmp/err" || fail "local_cluster.sh down failed"
for pid in $pids; do ! kill -0 "$pid" 2>/dev/null || fail "process $pid still runs after down"; done
timeout 60 bash "$cluster" down --dir "$tmp/slurm" >"$tmp/out" 2>"$tmp/err" || fail "a second down failed"

echo "all $checks checks passed"
