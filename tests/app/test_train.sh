#!/usr/bin/env bash
# `trident train` end to end on tiny models: the files a run leaves, that the loss falls, that gradient accumulation
# is exact, that a non-finite loss stops (or is skipped), and that bad data (a FIFO as data.path, an EOT id for a kind
# that has none) and a run directory whose checkpoints/latest is not a file are clear errors.
# Usage: TRIDENT=/path/to/trident bash tests/app/test_train.sh tests/app/configs
set -u
configs=${1:?usage: TRIDENT=/path/to/trident bash test_train.sh CONFIG_DIR}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export OMP_NUM_THREADS=2
tiny="$configs/tiny_train.yaml"

# json_check RUN_DIR PYTHON: runs a Python assertion over `records` (the run's metrics.jsonl).
json_check() {
  /usr/bin/python3 - "$1/metrics.jsonl" "$2" <<'PY' || fail "metrics check failed: $2"
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
exec(sys.argv[2])
PY
}

# A synthetic-data run: outputs, metrics fields, falling loss, evaluation.
run 0 train "$tiny" --set run.dir="$tmp/synthetic"
for f in config.resolved.yaml trident.log metrics.jsonl model_init.safetensors model_final.safetensors; do
  [[ -s $tmp/synthetic/$f ]] || fail "run dir lacks $f"
done
# device.blas: auto, logged with the library's kernel set
grep -qE "BLAS (openblas-debian: in use, OpenBLAS|onednn: in use, oneDNN)" "$tmp/synthetic/trident.log" || fail "no BLAS line in the log"
json_check "$tmp/synthetic" '
assert len(records) == 60, len(records)
fields = ["step", "loss", "lr", "tokens", "step_ms", "tokens_per_s", "mfu", "peak_mem_bytes"]
assert all(all(k in r for k in fields) for r in records), "a record lacks a field"
assert [r["step"] for r in records] == list(range(60))
first = sum(r["loss"] for r in records[:5]) / 5
last = sum(r["loss"] for r in records[-5:]) / 5
assert last < first - 1.0, (first, last)
assert [r["step"] for r in records if "eval_loss" in r] == [29, 59]'
# The resolved config is a config that describes the same run.
run 0 config "$tmp/synthetic/config.resolved.yaml"
stdout_has "dir: $tmp/synthetic"
# A second run into the same directory resumes from its final checkpoint (nothing left to do); with
# train.resume=never it is refused. Either way the first run's outputs are kept.
run 0 train "$tiny" --set run.dir="$tmp/synthetic"
json_check "$tmp/synthetic" 'assert len(records) == 60'
run 2 train "$tiny" --set run.dir="$tmp/synthetic" --set train.resume=never
last_stderr_line "trident: config error:" "already holds a run"
json_check "$tmp/synthetic" 'assert len(records) == 60' 

# One run at a time in a run.dir: a second run is refused naming the holder while the first trains; once the first is
# killed (kill -9: the kernel releases its lock), the directory is free and the run resumes from its checkpoint.
"$trident" train "$tiny" --set run.dir="$tmp/locked" --set train.steps=100000 --set checkpoint.every=5 \
  >"$tmp/first.out" 2>&1 &
first=$!
for _ in $(seq 1 300); do [[ -e $tmp/locked/checkpoints/step_00000005 ]] && break; sleep 0.1; done
run 2 train "$tiny" --set run.dir="$tmp/locked" --set train.steps=10
stderr_line "trident: config error:" "run.dir '$tmp/locked' is in use by another run (pid $first on"
kill -9 "$first"
wait "$first" 2>/dev/null
run 0 train "$tiny" --set run.dir="$tmp/locked" --set train.steps=10 --set checkpoint.every=5
grep -q "resuming from" "$tmp/locked/trident.log" || fail "the run did not resume after the lock's holder died"

# Gradient accumulation is exact: 3 micro-batches give the losses of 1.
run 0 train "$tiny" --set run.dir="$tmp/micro1" --set train.steps=5
run 0 train "$tiny" --set run.dir="$tmp/micro3" --set train.steps=5 --set train.micro_batches=3
/usr/bin/python3 - "$tmp/micro1/metrics.jsonl" "$tmp/micro3/metrics.jsonl" <<'PY' || fail "micro-batch losses differ"
import json, sys
a, b = ([json.loads(l)["loss"] for l in open(p)] for p in sys.argv[1:])
assert all(abs(x - y) <= 1e-5 * abs(x) for x, y in zip(a, b)), (a, b)
PY

# Text data: byte-level tokens, documents split at the separator, and a generated sample at the end.
for i in $(seq 1 200); do printf 'the quick brown fox %d jumps over the lazy dog\n%%\n' "$i"; done >"$tmp/corpus.txt"
run 0 train "$tiny" --set run.dir="$tmp/text" --set data.kind=text --set data.path="$tmp/corpus.txt" \
  --set 'data.separator="\n%\n"' --set model.vocab_size=256 --set train.steps=5 --set sample.tokens=20
grep -q "sample" "$tmp/text/trident.log" || fail "no sample in trident.log"

# A non-finite loss stops the run naming the step, or is skipped when asked.
run 1 train "$tiny" --set run.dir="$tmp/nan" --set train.lr=1e30 --set train.min_lr=0 --set train.warmup_steps=0 \
  --set train.grad_clip=0
last_stderr_line "trident: error:" "is not finite" "train.on_nonfinite"
run 0 train "$tiny" --set run.dir="$tmp/nan_skip" --set train.lr=1e30 --set train.min_lr=0 \
  --set train.warmup_steps=0 --set train.grad_clip=0 --set train.on_nonfinite=skip --set train.steps=4
grep -q "update skipped" "$tmp/nan_skip/trident.log" || fail "no skipped-update warning in the log"

# train.precision: bf16 (emulated on the cpu): the loss curve follows fp32's, and a run resumed from a checkpoint
# continues bit for bit (the bf16 weight copy is rebuilt from the fp32 masters, nothing else to save).
run 0 train "$tiny" --set run.dir="$tmp/bf16" --set train.precision=bf16 --set train.steps=20 --set checkpoint.every=10
grep -q "bf16 on the cpu backend is emulated" "$tmp/bf16/trident.log" || fail "no emulation warning in the log"
mkdir -p "$tmp/bf16_resumed/checkpoints"
cp -r "$tmp/bf16/checkpoints/step_00000010" "$tmp/bf16_resumed/checkpoints/"
run 0 train "$tiny" --set run.dir="$tmp/bf16_resumed" --set train.precision=bf16 --set train.steps=20
run 0 train "$tiny" --set run.dir="$tmp/fp32_20" --set train.steps=20 --set checkpoint.every=10
/usr/bin/python3 - "$tmp/fp32_20/metrics.jsonl" "$tmp/bf16/metrics.jsonl" "$tmp/bf16_resumed/metrics.jsonl" <<'PY' \
  || fail "bf16 losses do not follow fp32, or the resumed bf16 run diverged"
import json, sys
fp32, bf16, resumed = ([json.loads(l)["loss"] for l in open(p)] for p in sys.argv[1:])
assert len(bf16) == 20 and bf16[-1] < bf16[0] - 0.5, bf16
assert bf16 != fp32, "bf16 losses equal fp32 bit for bit: bf16 not in use"
worst = max(abs(x - y) / y for x, y in zip(bf16, fp32))
assert worst <= 2e-3, ("bf16 strays from fp32 by", worst)  # measured 6e-5
assert resumed == bf16[10:], "resume is not bit-identical"
PY

# The thread count does not change a bit (GEMM tiles by shape, fixed reduction blocks): a run on 3 threads, and the
# 2-thread run resumed at step 10 on 1 thread, give the 2-thread run's losses and weights.
run 0 train "$tiny" --set run.dir="$tmp/threads3" --set train.steps=20 --set device.threads=3
mkdir -p "$tmp/threads1_resumed/checkpoints"
cp -r "$tmp/fp32_20/checkpoints/step_00000010" "$tmp/threads1_resumed/checkpoints/"
run 0 train "$tiny" --set run.dir="$tmp/threads1_resumed" --set train.steps=20 --set device.threads=1
grep -q "1 rank(s) x 1 thread(s)" "$tmp/threads1_resumed/trident.log" || fail "device.threads=1 not in the log"
/usr/bin/python3 - "$tmp/fp32_20/metrics.jsonl" "$tmp/threads3/metrics.jsonl" "$tmp/threads1_resumed/metrics.jsonl" \
  <<'PY' || fail "the thread count changed the losses"
import json, sys
two, three, one_resumed = ([json.loads(l)["loss"] for l in open(p)] for p in sys.argv[1:])
assert three == two, "3 threads differ from 2"
assert one_resumed == two[10:], "resumed on 1 thread differs from 2"
PY
cmp -s "$tmp/fp32_20/model_final.safetensors" "$tmp/threads3/model_final.safetensors" ||
  fail "3 threads trained other weights than 2"
cmp -s "$tmp/fp32_20/model_final.safetensors" "$tmp/threads1_resumed/model_final.safetensors" ||
  fail "resumed on 1 thread trained other weights than 2"

# Bad data and unsupported settings are clear errors.
run 2 train "$tiny" --set run.dir="$tmp/bad" --set data.kind=text --set data.path="$tmp/no_such.txt" \
  --set model.vocab_size=256
last_stderr_line "trident: config error:" "data.path" "no_such.txt" "not found"
run 2 train "$tiny" --set run.dir="$tmp/bad" --set data.kind=text --set data.path="$tmp/corpus.txt"
last_stderr_line "trident: config error:" "model.vocab_size"
run 2 train "$tiny" --set run.dir="$tmp/bad" --set device.backend=cuda
last_stderr_line "trident: config error:" "device.backend"
# A FIFO (or anything that is not a regular file) as data.path is refused before it is opened: opening a FIFO would
# wait for a writer for ever, deaf to SIGTERM. Each kind of data file, within a bound.
mkfifo "$tmp/fifo" "$tmp/fifo_prefix.idx" "$tmp/fifo_prefix.bin"
for kind in text tokens indexed; do
  path="$tmp/fifo"
  [[ $kind == indexed ]] && path="$tmp/fifo_prefix"
  checks=$((checks + 1))
  echo "check $checks: trident train with data.kind=$kind from a FIFO -> exit 2 within 60 s"
  timeout -k 5 60 "$trident" train "$tiny" --set run.dir="$tmp/bad" --set data.kind=$kind --set data.path="$path" \
    --set model.vocab_size=256 >"$tmp/out" 2>"$tmp/err"
  code=$?
  [[ $code == 2 ]] || fail "exit code $code, expected 2 (124: it waited on the FIFO)"
  last_stderr_line "trident: config error:" "data.path" "not a regular file"
done
# data.eot_token cuts flat token files only: with text (byte tokens, cut at data.separator) it is refused.
run 2 train "$tiny" --set run.dir="$tmp/bad" --set data.kind=text --set data.path="$tmp/corpus.txt" \
  --set model.vocab_size=256 --set data.eot_token=300
stderr_line "trident: config error:" "data.eot_token = 300" "data.kind = text" "data.separator"
# checkpoints/latest replaced by a directory: every checkpoint would fail to rewrite it, so the run is refused before
# its first step, with the fix.
every=(--set train.warmup_steps=1 --set checkpoint.every=1 --set train.eval_every=0)
run 0 train "$tiny" --set run.dir="$tmp/latest_dir" --set train.steps=2 "${every[@]}"
rm "$tmp/latest_dir/checkpoints/latest" && mkdir "$tmp/latest_dir/checkpoints/latest"
run 2 train "$tiny" --set run.dir="$tmp/latest_dir" --set train.steps=4 "${every[@]}"
last_stderr_line "trident: config error:" "checkpoints/latest' is a directory" "move it aside"
[[ $(wc -l <"$tmp/latest_dir/metrics.jsonl") == 2 ]] || fail "a refused run added steps"

# A data file truncated under a running job: no SIGBUS (tokens are read with pread), but an error naming the file,
# after a checkpoint when the change is seen between steps (a read that lands past the new end fails at once).
/usr/bin/python3 -c "
import random; random.seed(1)
words = ['the', 'cat', 'sat', 'on', 'a', 'mat']
print('\n'.join(' '.join(random.choice(words) for _ in range(40)) for _ in range(5000)))
" >"$tmp/corpus.txt"
checks=$((checks + 1))
echo "check $checks: a text corpus truncated while trident trains -> exit 1 naming it"
"$trident" train "$tiny" --set run.dir="$tmp/shrunk" --set data.kind=text --set data.path="$tmp/corpus.txt" \
  --set 'data.separator="\n"' --set model.vocab_size=256 --set train.steps=1000000 --set checkpoint.every=0 \
  --set train.eval_every=0 \
  >"$tmp/out" 2>"$tmp/err" &
pid=$!
for _ in $(seq 1 600); do [[ $(wc -l <"$tmp/shrunk/metrics.jsonl" 2>/dev/null) -ge 3 ]] && break; sleep 0.05; done
truncate -s 1000 "$tmp/corpus.txt"
wait "$pid"
code=$?
[[ $code == 1 ]] || fail "exit code $code, expected 1"
last_stderr_line "trident: error:" "corpus.txt' changed while in use"
if grep -q "stopped after step" "$tmp/err"; then
  [[ -e $tmp/shrunk/checkpoints/latest ]] || fail "no checkpoint before stopping on the changed data"
fi

# SIGTERM while the run starts (data loading, held open by TRIDENT_TEST_STARTUP_DELAY_MS): exit 0 before the first
# step, with nothing of the run written; a resumed run's metrics and checkpoints are left as they were.
# start_and_stop DIR ARGS...: starts `trident train ARGS`, sends SIGTERM once it has logged its start, checks exit 0.
start_and_stop() {
  local dir=$1
  shift
  checks=$((checks + 1))
  echo "check $checks: SIGTERM while trident train $* starts -> exit 0"
  local started
  started=$(grep -cs "run 'tiny'" "$dir/trident.log")  # an earlier run's start lines
  TRIDENT_TEST_STARTUP_DELAY_MS=3000 "$trident" train "$@" >"$tmp/out" 2>"$tmp/err" &
  local pid=$!
  for _ in $(seq 1 300); do (($(grep -cs "run 'tiny'" "$dir/trident.log") > started)) && break; sleep 0.05; done
  kill -TERM "$pid"
  wait "$pid" || fail "exit code $?, expected 0"
  grep -q "stop requested by a signal while the run started" "$tmp/err" || fail "no message on stopping at start-up"
}
start_and_stop "$tmp/startup" "$tiny" --set run.dir="$tmp/startup"
[[ ! -e $tmp/startup/metrics.jsonl && ! -e $tmp/startup/checkpoints ]] || fail "a run stopped at start-up wrote files"
run 0 train "$tiny" --set run.dir="$tmp/restart" --set train.steps=6 --set checkpoint.every=3 --set train.eval_every=0
cp "$tmp/restart/metrics.jsonl" "$tmp/restart_metrics"
start_and_stop "$tmp/restart" "$tiny" --set run.dir="$tmp/restart" --set train.steps=9 --set checkpoint.every=3 \
  --set train.eval_every=0
cmp -s "$tmp/restart/metrics.jsonl" "$tmp/restart_metrics" ||
  fail "stopping a resumed run at start-up changed its metrics"
[[ $(cat "$tmp/restart/checkpoints/latest") == step_00000006 ]] || fail "stopping at start-up wrote a checkpoint"
run 0 train "$tiny" --set run.dir="$tmp/restart" --set train.steps=9 --set checkpoint.every=3 --set train.eval_every=0
[[ $(wc -l <"$tmp/restart/metrics.jsonl") == 9 ]] || fail "the run resumed after a stop at start-up lacks steps"
TRIDENT_TEST_STARTUP_DELAY_MS=soon run 2 train "$tiny" --set run.dir="$tmp/bad_delay"
last_stderr_line "trident: config error:" "TRIDENT_TEST_STARTUP_DELAY_MS='soon'"

echo "all $checks checks passed"
