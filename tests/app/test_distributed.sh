#!/usr/bin/env bash
# Data parallelism, checkpoints and resume, end to end under mpirun (oversubscribed on this machine's cores):
#  - 1, 2 and 4 ranks give the same losses;
#  - 20 steps straight equal 10 steps + resume for 10 bit for bit; resuming on another rank count matches;
#  - SIGTERM writes a checkpoint and exits 0, and the resumed run continues at the next step;
#  - a rank killed while a checkpoint is being written leaves the previous checkpoint intact and resumable;
#  - a corrupt newest checkpoint is passed over with a warning naming it;
#  - a rank that dies mid-run ends the whole job with a non-zero exit, never a hang.
# Usage: TRIDENT=/path/to/trident bash tests/app/test_distributed.sh tests/app/configs
set -u
configs=${1:?usage: TRIDENT=/path/to/trident bash test_distributed.sh CONFIG_DIR}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
mpirun_env
tiny="$configs/tiny_train.yaml"
base=(--set train.eval_every=0 --set checkpoint.keep=5 --set train.warmup_steps=2 --set parallel.strategy=dp)

# Same losses for 1, 2 and 4 ranks.
for n in 1 2 4; do mpi "$n" 0 train "$tiny" "${base[@]}" --set train.steps=10 --set run.dir="$tmp/np$n"; done
close "$tmp/np1" "$tmp/np2" 1e-5
close "$tmp/np1" "$tmp/np4" 1e-5
grep -q '"world_size":4' "$tmp/np4/metrics.jsonl" || fail "metrics do not record 4 ranks"

# 20 steps straight (checkpoint at step 10) vs resuming that checkpoint for the last 10: bit-identical losses on
# the same rank count, within 1e-5 on 4 ranks and on 1.
mpi 2 0 train "$tiny" "${base[@]}" --set train.steps=20 --set checkpoint.every=10 --set run.dir="$tmp/straight"
[[ -d $tmp/straight/checkpoints/step_00000010 ]] || fail "no checkpoint at step 10"
for n in 2 4 1; do
  mkdir -p "$tmp/resumed$n/checkpoints"
  cp -r "$tmp/straight/checkpoints/step_00000010" "$tmp/resumed$n/checkpoints/"
  mpi "$n" 0 train "$tiny" "${base[@]}" --set train.steps=20 --set run.dir="$tmp/resumed$n"
  grep -q "resuming from" "$tmp/resumed$n/trident.log" || fail "the run on $n ranks did not resume"
  /usr/bin/python3 - "$tmp/straight/metrics.jsonl" "$tmp/resumed$n/metrics.jsonl" "$n" <<'PY' || fail "resume on $n ranks diverged"
import json, sys
a = {r["step"]: r["loss"] for r in map(json.loads, open(sys.argv[1]))}
b = {r["step"]: r["loss"] for r in map(json.loads, open(sys.argv[2]))}
assert sorted(b) == list(range(10, 20)), sorted(b)
if sys.argv[3] == "2":
    assert all(a[s] == b[s] for s in b), [(s, a[s], b[s]) for s in b]
else:
    assert all(abs(a[s] - b[s]) <= 1e-5 * abs(a[s]) for s in b), [(s, a[s], b[s]) for s in b]
PY
done

# SIGTERM mid-run: checkpoint, exit 0, and the resumed run continues at the next step.
(timeout 120 mpirun -np 2 "$trident" train "$tiny" "${base[@]}" --set train.steps=100000 --set run.dir="$tmp/term" \
   >"$tmp/out" 2>"$tmp/err"; echo $? >"$tmp/term_code") &
for _ in $(seq 1 100); do [[ -s $tmp/term/metrics.jsonl ]] && break; sleep 0.2; done
pkill -TERM -f "run.dir=$tmp/term" -n  # one rank (the newest process); the ranks agree to stop together
wait
checks=$((checks + 1))
echo "check $checks: SIGTERM -> checkpoint and exit 0"
[[ $(cat "$tmp/term_code") == 0 ]] || fail "exit code $(cat "$tmp/term_code") after SIGTERM"
stopped=$(ls "$tmp/term/checkpoints" | grep '^step_' | tail -n 1)
[[ -n $stopped ]] || fail "no checkpoint after SIGTERM"
steps_done=$((10#${stopped#step_}))
# SIGTERM to the job's launcher, scripts/cluster/mpirun.sh (mpirun makes its own SIGTERM an abort, exit 1): every
# rank stops after its step with a checkpoint, and the launcher exits 0.
(timeout 120 bash "$repo/scripts/cluster/mpirun.sh" -np 2 "$trident" train "$tiny" "${base[@]}" \
   --set train.steps=100000 --set run.dir="$tmp/launcher" >"$tmp/out" 2>"$tmp/err"; echo $? >"$tmp/launcher_code") &
for _ in $(seq 1 100); do [[ -s $tmp/launcher/metrics.jsonl ]] && break; sleep 0.2; done
pkill -TERM -f "scripts/cluster/mpirun.sh -np 2" -o
wait
checks=$((checks + 1))
echo "check $checks: SIGTERM to scripts/cluster/mpirun.sh -> every rank checkpoints, exit 0"
[[ $(cat "$tmp/launcher_code") == 0 ]] || fail "exit code $(cat "$tmp/launcher_code") after SIGTERM to the launcher"
grep -q "stop requested by a signal" "$tmp/err" "$tmp/launcher/trident.log" || fail "the ranks were not asked to stop"
[[ -n $(ls "$tmp/launcher/checkpoints" | grep '^step_') ]] || fail "no checkpoint after SIGTERM to the launcher"
mpi 2 0 train "$tiny" "${base[@]}" --set train.steps=$((steps_done + 2)) --set run.dir="$tmp/term"
/usr/bin/python3 -c "
import json, sys
steps = [json.loads(l)['step'] for l in open('$tmp/term/metrics.jsonl')]
assert steps == list(range($steps_done + 2)), steps" || fail "the resumed run did not continue at step $steps_done"

# A rank killed while a checkpoint is being written: the previous checkpoint stays intact and resumable.
mpi 2 0 train "$tiny" "${base[@]}" --set train.steps=4 --set run.dir="$tmp/crash"
(TRIDENT_TEST_CHECKPOINT_DELAY_MS=30000 timeout 120 mpirun -np 2 "$trident" train "$tiny" "${base[@]}" \
   --set train.steps=6 --set run.dir="$tmp/crash" >"$tmp/out" 2>"$tmp/err"; echo $? >"$tmp/crash_code") &
for _ in $(seq 1 200); do [[ -d $tmp/crash/checkpoints/step_00000006.tmp ]] && break; sleep 0.1; done
[[ -d $tmp/crash/checkpoints/step_00000006.tmp ]] || fail "the slowed checkpoint write never started"
pkill -KILL -f "run.dir=$tmp/crash"
wait
run 0 ckpt verify "$tmp/crash/checkpoints/step_00000004"
mpi 2 0 train "$tiny" "${base[@]}" --set train.steps=6 --set run.dir="$tmp/crash"
grep -q "resuming from.*step_00000004" "$tmp/crash/trident.log" || fail "did not resume from the intact checkpoint"

# A corrupt newest checkpoint is passed over with a warning naming it; resume uses the one before.
mpi 1 0 train "$tiny" "${base[@]}" --set train.steps=4 --set checkpoint.every=2 --set run.dir="$tmp/corrupt"
printf 'garbage' | dd of="$tmp/corrupt/checkpoints/step_00000004/model.safetensors" bs=1 seek=100 conv=notrunc 2>/dev/null
run 1 ckpt verify "$tmp/corrupt/checkpoints/step_00000004"
mpi 1 0 train "$tiny" "${base[@]}" --set train.steps=5 --set run.dir="$tmp/corrupt"
grep -q "step_00000004.*model.safetensors" "$tmp/corrupt/trident.log" || fail "no warning naming the corrupt file"
grep -q "resuming from.*step_00000002" "$tmp/corrupt/trident.log" || fail "did not fall back to step 2"

# A rank that dies mid-run ends the job: non-zero exit, bounded time, the dead rank named.
(timeout 120 mpirun -np 2 "$trident" train "$tiny" "${base[@]}" --set train.steps=100000 --set run.dir="$tmp/dead" \
   >"$tmp/out" 2>"$tmp/err"; echo $? >"$tmp/dead_code") &
for _ in $(seq 1 100); do [[ -s $tmp/dead/metrics.jsonl ]] && break; sleep 0.2; done
pkill -KILL -f "run.dir=$tmp/dead" -n
wait
checks=$((checks + 1))
echo "check $checks: a killed rank ends the job with a non-zero exit"
code=$(cat "$tmp/dead_code")
[[ $code != 0 && $code != 124 ]] || fail "exit code $code (124 = the job hung until the timeout)"
grep -qi "rank" "$tmp/err" || fail "mpirun's message does not name the rank"

# A rank frozen with SIGSTOP: the others wait in their next collective until the watchdog (run.watchdog_s) names
# it and ends the job with exit 1.
checks=$((checks + 1))
echo "check $checks: a rank stopped with SIGSTOP -> the watchdog names it, exit 1"
timeout 120 mpirun -np 3 "$trident" train "$tiny" "${base[@]}" --set train.steps=1000000 --set run.watchdog_s=3 \
  --set run.dir="$tmp/frozen" >"$tmp/out" 2>"$tmp/err" &
job=$!
for _ in $(seq 1 300); do [[ $(wc -l <"$tmp/frozen/metrics.jsonl" 2>/dev/null) -ge 3 ]] && break; sleep 0.1; done
frozen=
for pid in $(pgrep -f "run.dir=$tmp/frozen"); do  # rank 2, by the rank mpirun gave it
  [[ $(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep '^OMPI_COMM_WORLD_RANK=') == *=2 ]] && frozen=$pid
done
[[ -n $frozen ]] || fail "rank 2 of the run is not found"
kill -STOP "$frozen"
wait "$job"
code=$?
kill -CONT "$frozen" 2>/dev/null
[[ $code == 1 ]] || fail "exit code $code, expected 1"
grep -q "trident: error: watchdog: step [0-9]* has not completed within 3 s .*rank 2 did not answer" "$tmp/err" ||
  fail "the watchdog's message does not name the step and rank 2"

# A checkpoint that takes longer than the watchdog's deadline (on a slow link its gather does) is not a frozen rank:
# writing it is not timed, so the run ends with exit 0 and its checkpoint.
checks=$((checks + 1))
echo "check $checks: a checkpoint slower than run.watchdog_s -> exit 0, not the watchdog"
TRIDENT_TEST_CHECKPOINT_DELAY_MS=4000 timeout 120 mpirun -np 2 -x TRIDENT_TEST_CHECKPOINT_DELAY_MS "$trident" train \
  "$tiny" "${base[@]}" --set train.steps=3 --set run.watchdog_s=1 --set run.dir="$tmp/slow_checkpoint" \
  >"$tmp/out" 2>"$tmp/err"
code=$?
[[ $code == 0 ]] || fail "exit code $code, expected 0: $(grep -m1 'watchdog' "$tmp/err")"
[[ $(cat "$tmp/slow_checkpoint/checkpoints/latest") == step_00000003 ]] || fail "the final checkpoint is not step 3"

echo "all $checks checks passed"
