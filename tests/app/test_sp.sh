#!/usr/bin/env bash
# The sequence-parallel baselines end to end under mpirun (oversubscribed), next to LASP (test_lasp.sh): Ring
# Attention and Ulysses train a softmax model (learned positions: a rank's slice keeps its tokens' positions in
# their documents) to the single-rank losses; Ulysses a linear one too; dp 2 x sp 2 with Ring; documents shorter
# than the group; a Ring run resumes bit for bit; bf16 activations; the layouts a method cannot run are configuration
# errors.
# Usage: TRIDENT=/path/to/trident bash tests/app/test_sp.sh tests/app/configs
set -u
configs=${1:?usage: TRIDENT=/path/to/trident bash test_sp.sh CONFIG_DIR}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
mpirun_env
tiny="$configs/tiny_train.yaml"  # softmax, n_head 4
base=(--set train.eval_every=0 --set train.warmup_steps=2 --set train.steps=10)
sp=(--set parallel.strategy=lasp)

# Softmax: the 1-rank reference, then Ring and Ulysses at sp = 4 and Ring at dp 2 x sp 2, to 1e-5.
mpi 1 0 train "$tiny" "${base[@]}" --set run.dir="$tmp/single"
mpi 4 0 train "$tiny" "${base[@]}" "${sp[@]}" --set parallel.sp.method=ring --set parallel.sp.size=4 \
  --set run.dir="$tmp/ring4"
close "$tmp/single" "$tmp/ring4" 1e-5
grep -q '"strategy":"ring","degree":4' "$tmp/ring4/metrics.jsonl" || fail "metrics do not record ring with sp 4"
grep -q "ring sp=4: 1 replica(s) x sequence-parallel groups of 4 ranks" "$tmp/ring4/trident.log" || fail "the log does not name Ring"
mpi 4 0 train "$tiny" "${base[@]}" "${sp[@]}" --set parallel.sp.method=ulysses --set parallel.sp.size=4 \
  --set run.dir="$tmp/ulysses4"
close "$tmp/single" "$tmp/ulysses4" 1e-5
mpi 4 0 train "$tiny" "${base[@]}" "${sp[@]}" --set parallel.sp.method=ring --set parallel.sp.size=2 \
  --set run.dir="$tmp/dp2ring2"
close "$tmp/single" "$tmp/dp2ring2" 1e-5

# Fewer tokens than ranks: one 2-token document a step on 4 ranks leaves two of them an empty slice (no targets);
# Ring and Ulysses still train it to the single-rank losses.
short=(--set model.max_seq_len=2 --set train.batch_tokens=2 --set train.steps=3 --set train.warmup_steps=1)
mpi 1 0 train "$tiny" "${base[@]}" "${short[@]}" --set run.dir="$tmp/short1"
for method in ring ulysses; do
  mpi 4 0 train "$tiny" "${base[@]}" "${sp[@]}" "${short[@]}" --set parallel.sp.method=$method \
    --set parallel.sp.size=4 --set run.dir="$tmp/short_$method"
  close "$tmp/short1" "$tmp/short_$method" 1e-5
done

# Linear attention through Ulysses (each rank runs the chunked kernel on its heads' slopes), sp = 2.
mpi 1 0 train "$tiny" "${base[@]}" --set model.attention=linear --set run.dir="$tmp/single_linear"
mpi 2 0 train "$tiny" "${base[@]}" "${sp[@]}" --set model.attention=linear --set parallel.sp.method=ulysses \
  --set parallel.sp.size=2 --set run.dir="$tmp/ulysses2_linear"
close "$tmp/single_linear" "$tmp/ulysses2_linear" 1e-5

# Ring at sp = 2: 6 steps straight vs 3 + resume for 3, bit-identical losses.
resume=(--set train.steps=6 --set checkpoint.every=3 --set parallel.sp.method=ring --set parallel.sp.size=2)
mpi 2 0 train "$tiny" "${base[@]}" "${sp[@]}" "${resume[@]}" --set run.dir="$tmp/straight"
mkdir -p "$tmp/resumed/checkpoints"
cp -r "$tmp/straight/checkpoints/step_00000003" "$tmp/resumed/checkpoints/"
mpi 2 0 train "$tiny" "${base[@]}" "${sp[@]}" "${resume[@]}" --set run.dir="$tmp/resumed"
resumed_same "$tmp/straight" "$tmp/resumed" 3 5

# train.precision: bf16 (emulated here): Ring computes on fp32 copies of the layer's bf16 activations and rounds its
# outputs once, Ulysses runs the bf16 kernels on its heads (both send bf16): either way the bf16 kernels'
# arithmetic, so a 1-rank group is bit-identical to the single-rank bf16 run and sp = 2 follows it to bf16's
# precision (the rounding of an output flips where fp32 sums differ in the last bit).
bf16=(--set train.precision=bf16)
mpi 1 0 train "$tiny" "${base[@]}" "${bf16[@]}" --set run.dir="$tmp/single_bf16"
for method in ring ulysses; do
  mpi 1 0 train "$tiny" "${base[@]}" "${bf16[@]}" "${sp[@]}" --set parallel.sp.method=$method --set parallel.sp.size=1 \
    --set run.dir="$tmp/${method}1_bf16"
  close "$tmp/single_bf16" "$tmp/${method}1_bf16" 0
done
for method in ring ulysses; do
  mpi 2 0 train "$tiny" "${base[@]}" "${bf16[@]}" "${sp[@]}" --set parallel.sp.method=$method --set parallel.sp.size=2 \
    --set run.dir="$tmp/${method}2_bf16"
  close "$tmp/single_bf16" "$tmp/${method}2_bf16" 1e-3
done

# What a method cannot run: configuration errors (exit 2) before any rank work.
run 2 train "$tiny" "${sp[@]}" --set run.dir="$tmp/bad1"
last_stderr_line "trident: config error:" "parallel.sp.method: 'lasp'" "model.attention is 'softmax'"
run 2 train "$tiny" "${sp[@]}" --set model.attention=linear --set parallel.sp.method=ring --set run.dir="$tmp/bad2"
last_stderr_line "trident: config error:" "Ring Attention here is softmax-only"
run 2 train "$tiny" "${sp[@]}" --set parallel.sp.method=ulysses --set parallel.sp.size=3 --set run.dir="$tmp/bad3"
last_stderr_line "trident: config error:" "model.n_head = 4" "parallel.sp.size = 3"

echo "all $checks checks passed"
