#!/usr/bin/env bash
# Hybrid models end to end under mpirun (oversubscribed): a model whose layers alternate linear and softmax attention
# (model.layers: LS) trains at sp = 4 with LASP in its linear layers beside Ulysses or Ring Attention in its softmax
# layers, on the same groups and slices, to the single-rank losses; Ring or USP beside LASP on a group larger than
# the head count; FlexSP and auto; a LASP + Ring run resumes bit for bit; bf16; the checkpoint's config.json names the
# pattern; a pattern or a method the model cannot run is a one-line configuration error naming the key.
# Usage: TRIDENT=/path/to/trident bash tests/app/test_hybrid.sh tests/app/configs
set -u
configs=${1:?usage: TRIDENT=/path/to/trident bash test_hybrid.sh CONFIG_DIR}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
mpirun_env
tiny="$configs/tiny_train.yaml"  # 2 layers, n_head 4
base=(--set train.eval_every=0 --set train.warmup_steps=2 --set train.steps=6 --set model.attention=hybrid
      --set model.layers=LS)
sp=(--set parallel.strategy=sp --set parallel.sp.method=lasp --set parallel.lasp.variant=lasp2)

mpi 1 0 train "$tiny" "${base[@]}" --set run.dir="$tmp/single"
"$python" - "$tmp/single/checkpoints/step_00000006/config.json" <<'PY' || fail "config.json does not describe the hybrid"
import json, sys
c = json.load(open(sys.argv[1]))
assert c["model_type"] == "trident_hybrid" and c["layers"] == "LS" and c["attention"] == "hybrid", c
PY
for softmax in ulysses ring; do
  mpi 4 0 train "$tiny" "${base[@]}" "${sp[@]}" --set parallel.sp.softmax_method=$softmax --set parallel.sp.size=4 \
    --set run.dir="$tmp/lasp_$softmax"
  close "$tmp/single" "$tmp/lasp_$softmax" 1e-5
  grep -q "\"strategy\":\"lasp2+$softmax\",\"degree\":4" "$tmp/lasp_$softmax/metrics.jsonl" ||
    fail "metrics do not record lasp2+$softmax at sp 4"
done

# 2 heads on a group of 4: Ulysses cannot split them; Ring beside LASP can, and USP (Ulysses over pairs of ranks x
# Ring over the 2 pairs: one node of 4 ranks).
heads=(--set model.n_head=2)
mpi 1 0 train "$tiny" "${base[@]}" "${heads[@]}" --set run.dir="$tmp/single_2heads"
for softmax in ring usp; do
  mpi 4 0 train "$tiny" "${base[@]}" "${heads[@]}" "${sp[@]}" --set parallel.sp.softmax_method=$softmax \
    --set parallel.sp.size=4 --set run.dir="$tmp/${softmax}_2heads"
  close "$tmp/single_2heads" "$tmp/${softmax}_2heads" 1e-5
done
grep -q "USP in the softmax layers: Ulysses over 2 ranks x Ring Attention over 2 Ulysses groups" \
  "$tmp/usp_2heads/trident.log" || fail "the log does not give USP's degrees"
run 2 train "$tiny" "${base[@]}" "${heads[@]}" "${sp[@]}" --set parallel.sp.size=4 --set run.dir="$tmp/bad_heads"
last_stderr_line "trident: config error:" "parallel.sp.softmax_method: 'ulysses'" "model.n_head = 2" \
  "parallel.sp.softmax_method: ring or usp"

# FlexSP (LASP inside its groups, Ulysses beside it) and auto (every candidate the hybrid can run).
mpi 4 0 train "$tiny" "${base[@]}" --set parallel.strategy=flexsp --set run.dir="$tmp/flexsp"
close "$tmp/single" "$tmp/flexsp" 1e-5
mpi 4 0 train "$tiny" "${base[@]}" --set parallel.strategy=auto \
  --set run.dir="$tmp/auto"
close "$tmp/single" "$tmp/auto" 1e-5

# LASP + Ring at sp = 2: 6 steps straight vs 3 + resume for 3, bit-identical losses.
resume=(--set checkpoint.every=3 --set parallel.sp.softmax_method=ring --set parallel.sp.size=2)
mpi 2 0 train "$tiny" "${base[@]}" "${sp[@]}" "${resume[@]}" --set run.dir="$tmp/straight"
mkdir -p "$tmp/resumed/checkpoints"
cp -r "$tmp/straight/checkpoints/step_00000003" "$tmp/resumed/checkpoints/"
mpi 2 0 train "$tiny" "${base[@]}" "${sp[@]}" "${resume[@]}" --set run.dir="$tmp/resumed"
resumed_same "$tmp/straight" "$tmp/resumed" 3 5
# A checkpoint of another pattern is refused, naming the key.
run 1 train "$tiny" "${base[@]}" --set model.layers=SL --set train.resume="$tmp/straight/checkpoints/step_00000003" \
  --set run.dir="$tmp/other_pattern"
last_stderr_line "trident: error:" "does not fit this model" "model.layers: LS in the checkpoint, SL now"

# bf16: LASP and Ulysses beside it follow the single-rank bf16 run to bf16's precision.
bf16=(--set train.precision=bf16)
mpi 1 0 train "$tiny" "${base[@]}" "${bf16[@]}" --set run.dir="$tmp/single_bf16"
mpi 2 0 train "$tiny" "${base[@]}" "${bf16[@]}" "${sp[@]}" --set parallel.sp.size=2 --set run.dir="$tmp/sp2_bf16"
close "$tmp/single_bf16" "$tmp/sp2_bf16" 1e-3

# trident plan shows a hybrid's candidates and choice per batch: a profile of this model (trident bench profile) on
# the links of a 64-GPU cluster of 8 nodes: Ulysses beside LASP up to the 8 heads, Ring or USP beyond.
wide=(--set model.n_head=8 --set model.max_seq_len=4096 --set train.batch_tokens=65536 --set parallel.strategy=auto)
run 0 bench profile "$tiny" "${base[@]}" "${wide[@]}" --set model.max_seq_len=64 --out "$tmp/profile.yaml"
"$python" - "$tmp/profile.yaml" "$(dirname "${BASH_SOURCE[0]}")/../../configs/clusters/a100-8x8-gpt7b.yaml" \
  "$tmp/cluster.yaml" <<'PY' || fail "cannot put the profile on the cluster's links"
import sys, yaml
profile, cluster = (yaml.safe_load(open(p)) for p in sys.argv[1:3])
profile.update(cluster=cluster["cluster"], network=cluster["network"])
yaml.safe_dump(profile, open(sys.argv[3], "w"), sort_keys=False)
PY
run 0 plan "$tiny" "${base[@]}" "${wide[@]}" --cluster "$tmp/cluster.yaml" --batches 1
stdout_has "64 rank(s) (8 per node)" "lasp1+ulysses sp=8" "lasp1+ring sp=64" "lasp1+usp sp=64" "ulysses sp=8"
grep -q -- "-> " "$tmp/out" || fail "the plan chose nothing"

# What the model cannot be, or a method cannot run: configuration errors (exit 2) before any rank work.
run 2 train "$tiny" "${base[@]}" --set model.layers=LLS --set run.dir="$tmp/bad1"
last_stderr_line "trident: config error:" "model.layers = LLS" "must divide model.n_layer = 2"
run 2 train "$tiny" "${base[@]}" --set model.layers=LX --set run.dir="$tmp/bad2"
last_stderr_line "trident: config error:" "model.layers = LX" "not 'X'"
run 2 train "$tiny" --set model.layers=LS --set run.dir="$tmp/bad3"
last_stderr_line "trident: config error:" "model.layers = LS" "model.attention: hybrid"
run 2 train "$tiny" "${base[@]}" --set parallel.strategy=sp --set parallel.sp.method=ring --set run.dir="$tmp/bad4"
last_stderr_line "trident: config error:" "parallel.sp.method: 'ring'" "parallel.sp.softmax_method: ring"

echo "all $checks checks passed"
