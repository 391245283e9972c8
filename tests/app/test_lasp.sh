#!/usr/bin/env bash
# LASP end to end under mpirun (oversubscribed): sequence-parallel training of a linear-attention model gives the
# single-rank loss curve (sp = 4; dp 2 x sp 2; sp = 3 with LASP-2 and evaluation), resumes bit for bit from its own
# checkpoint, trains in bf16, fits a batch in a memory budget that one rank cannot, samples text at the end, and bad layouts are
# configuration errors.
# Usage: TRIDENT=/path/to/trident bash tests/app/test_lasp.sh tests/app/configs
set -u
configs=${1:?usage: TRIDENT=/path/to/trident bash test_lasp.sh CONFIG_DIR}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
mpirun_env
tiny="$configs/tiny_train.yaml"
base=(--set model.attention=linear --set train.eval_every=0 --set train.warmup_steps=2 --set checkpoint.keep=5)
lasp=(--set parallel.strategy=lasp)

# The reference: one rank, 10 steps.
mpi 1 0 train "$tiny" "${base[@]}" --set train.steps=10 --set run.dir="$tmp/single"

# sp = 4 (LASP-1 ring), dp 2 x sp 2 (variant auto: each group times both), and sp = 3 with LASP-2 (allgather):
# the single-rank losses to 1e-5.
mpi 4 0 train "$tiny" "${base[@]}" "${lasp[@]}" --set parallel.sp.size=4 --set train.steps=10 \
  --set run.dir="$tmp/sp4"
close "$tmp/single" "$tmp/sp4" 1e-5
grep -q '"strategy":"lasp1","degree":4' "$tmp/sp4/metrics.jsonl" || fail "metrics do not record lasp1 with degree 4"
grep -q "lasp1 sp=4: 1 replica(s) x sequence-parallel groups of 4 ranks" "$tmp/sp4/trident.log" || fail "the log does not name LASP"
mpi 4 0 train "$tiny" "${base[@]}" "${lasp[@]}" --set parallel.sp.size=2 --set train.steps=10 \
  --set parallel.lasp.variant=auto --set run.dir="$tmp/dp2sp2"
close "$tmp/single" "$tmp/dp2sp2" 1e-5
grep -Eq "parallel.lasp.variant: auto chose lasp[12]:.*LASP-1's chain [0-9.]+ ms, LASP-2's allgather [0-9.]+ ms" \
  "$tmp/dp2sp2/trident.log" || fail "the log does not say which variant auto chose and why"
mpi 3 0 train "$tiny" "${base[@]}" "${lasp[@]}" --set parallel.sp.size=3 --set parallel.lasp.variant=lasp2 \
  --set train.steps=10 --set train.eval_every=5 --set run.dir="$tmp/sp3"
close "$tmp/single" "$tmp/sp3" 1e-5
mpi 1 0 train "$tiny" "${base[@]}" --set train.steps=10 --set train.eval_every=5 --set run.dir="$tmp/single_eval"
/usr/bin/python3 - "$tmp/single_eval/metrics.jsonl" "$tmp/sp3/metrics.jsonl" <<'PY' || fail "eval losses differ"
import json, sys
a, b = ([r["eval_loss"] for r in map(json.loads, open(p)) if "eval_loss" in r] for p in sys.argv[1:3])
assert len(a) == len(b) == 2 and all(abs(x - y) <= 1e-5 * abs(x) for x, y in zip(a, b)), (a, b)
PY

# train.precision: bf16 (emulated here): a 1-rank group is bit-identical to the single-rank bf16 run, sp = 2 follows
# it to bf16's precision (an output's rounding flips where fp32 sums differ in the last bit).
bf16=(--set train.precision=bf16 --set train.steps=10)
mpi 1 0 train "$tiny" "${base[@]}" "${bf16[@]}" --set run.dir="$tmp/single_bf16"
mpi 1 0 train "$tiny" "${base[@]}" "${lasp[@]}" "${bf16[@]}" --set parallel.sp.size=1 --set run.dir="$tmp/sp1_bf16"
close "$tmp/single_bf16" "$tmp/sp1_bf16" 0
mpi 2 0 train "$tiny" "${base[@]}" "${lasp[@]}" "${bf16[@]}" --set parallel.sp.size=2 --set run.dir="$tmp/sp2_bf16"
close "$tmp/single_bf16" "$tmp/sp2_bf16" 1e-3

# 20 steps straight vs 10 + resume for 10, both sp = 2: bit-identical losses.
mpi 2 0 train "$tiny" "${base[@]}" "${lasp[@]}" --set parallel.sp.size=2 --set train.steps=20 \
  --set checkpoint.every=10 --set run.dir="$tmp/straight"
mkdir -p "$tmp/resumed/checkpoints"
cp -r "$tmp/straight/checkpoints/step_00000010" "$tmp/resumed/checkpoints/"
mpi 2 0 train "$tiny" "${base[@]}" "${lasp[@]}" --set parallel.sp.size=2 --set train.steps=20 \
  --set run.dir="$tmp/resumed"
resumed_same "$tmp/straight" "$tmp/resumed" 10 19

# Activations per rank shrink with the group: a 16K-token batch needs ~190 MiB on one rank, ~50 MiB per rank at
# sp = 4. In a 0.1 GiB budget a rank's activations hold a few thousand tokens (printed at start-up): one rank refuses
# the batch (naming the capacity and the longest document), sp = 4 trains it.
long=(--set train.batch_tokens=16384 --set model.max_seq_len=4096 --set train.steps=2 --set train.warmup_steps=1
      --set device.memory_gb=0.1)
run 1 train "$tiny" "${base[@]}" "${long[@]}" --set run.dir="$tmp/long1"
grep -q "above its activation capacity of [0-9]* tokens" "$tmp/err" || fail "one rank did not refuse the batch"
grep -q "longest document" "$tmp/err" || fail "the refusal does not name the longest document"
grep -q "activations: [0-9]* tokens per rank (device.memory_gb = 0.1" "$tmp/long1/trident.log" ||
  fail "the capacity is not printed at start-up"
mpi 4 0 train "$tiny" "${base[@]}" "${lasp[@]}" "${long[@]}" --set parallel.sp.size=4 --set run.dir="$tmp/long4"

# Byte-level text with sampling at the end: rank 0 generates alone, with the local kernels instead of its group's.
for i in $(seq 1 200); do printf 'the quick brown fox %d jumps over the lazy dog\n%%\n' "$i"; done >"$tmp/corpus.txt"
mpi 2 0 train "$tiny" "${base[@]}" "${lasp[@]}" --set parallel.sp.size=2 --set train.steps=3 \
  --set data.kind=text --set data.path="$tmp/corpus.txt" --set data.separator="\n%\n" --set model.vocab_size=256 \
  --set sample.tokens=20 --set run.dir="$tmp/text"
grep -q "sample" "$tmp/text/trident.log" || fail "no sample after a LASP run"

# Bad layouts: clear configuration errors (exit 2).
mpi 4 2 train "$tiny" "${base[@]}" "${lasp[@]}" --set parallel.sp.size=3 --set run.dir="$tmp/bad1"
grep -q "parallel.sp.size = 3 does not divide the 4 ranks" "$tmp/err" || fail "no error naming parallel.sp.size"
run 2 train "$tiny" "${lasp[@]}" --set run.dir="$tmp/bad2"
last_stderr_line "trident: config error:" "parallel.sp.method: 'lasp'" "model.attention is 'softmax'"
run 2 train "$tiny" "${base[@]}" "${lasp[@]}" --set parallel.lasp.variant=tree --set run.dir="$tmp/bad3"
last_stderr_line "trident: config error:" "parallel.lasp.variant"

echo "all $checks checks passed"
