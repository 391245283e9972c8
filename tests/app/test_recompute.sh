#!/usr/bin/env bash
# train.recompute end to end under mpirun (oversubscribed): full (each layer keeps its input and recomputes its forward
# before its backward), selective (the backward recomputes the norms' and GELU's outputs) and auto (full's memory, each
# pass recomputing only the layers its tokens need); every strategy that runs a resident model trains to the losses
# and final weights of the run that keeps every layer's activations, bit for bit: dp, LASP-1 (sp 4), LASP-2 (sp 2),
# Ulysses, Ring Attention, USP, a hybrid (LASP-2 beside Ulysses), FlexSP, bf16, and beside parallel.zero.stage: 1;
# auto recomputes nothing where the passes fit, all but the last layer or some of them where they do not (full's
# losses, bit for bit, under dp, LASP-2, Ulysses and a hybrid); a run resumes with it from a checkpoint written without
# it, bit for bit; the activation capacity grows by what it frees; ATOM's swapped model and the pipeline refuse it.
# Usage: TRIDENT=/path/to/trident bash tests/app/test_recompute.sh tests/app/configs
set -u
configs=${1:?usage: TRIDENT=/path/to/trident bash test_recompute.sh CONFIG_DIR}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
mpirun_env
tiny="$configs/tiny_train.yaml"  # softmax, n_head 4
base=(--set train.eval_every=3 --set train.warmup_steps=2 --set train.steps=6 --set model.n_layer=3)
full=(--set train.recompute=full)
selective=(--set train.recompute=selective)
as_needed=(--set train.recompute=auto)
# recomputed DIR K: every step of DIR's run recomputed K layers at most a pass
recomputed() {
  "$python" - "$1/metrics.jsonl" "$2" <<'PY' || fail "$1 did not recompute $2 layer(s) a step"
import json, sys
got = [json.loads(l)["recomputed_layers"] for l in open(sys.argv[1])]
assert got and all(k == int(sys.argv[2]) for k in got), got
PY
}

node4_profile "$tmp/node4.yaml"
sp=(--set parallel.strategy=sp)
linear=(--set model.attention=linear --set parallel.sp.method=lasp)
layouts=("dp --set parallel.strategy=dp"
         "lasp1 ${sp[*]} ${linear[*]} --set parallel.lasp.variant=lasp1 --set parallel.sp.size=4"
         "lasp2 ${sp[*]} ${linear[*]} --set parallel.lasp.variant=lasp2 --set parallel.sp.size=2"
         "ulysses ${sp[*]} --set parallel.sp.method=ulysses --set parallel.sp.size=4"
         "ring ${sp[*]} --set parallel.sp.method=ring --set parallel.sp.size=4"
         "usp ${sp[*]} --set parallel.sp.method=usp --set parallel.sp.size=4 --set model.n_head=2"
         "hybrid ${sp[*]} --set model.attention=hybrid --set model.layers=LSL --set parallel.sp.method=lasp --set parallel.lasp.variant=lasp2 --set parallel.sp.size=2"
         "flexsp --set parallel.strategy=flexsp --set parallel.select.mode=model --set parallel.select.profile=$tmp/node4.yaml"
         "bf16 --set parallel.strategy=dp --set train.precision=bf16"
         "zero1 --set parallel.strategy=dp --set parallel.zero.stage=1")
for layout in "${layouts[@]}"; do
  split_layout "$layout"
  mpi 4 0 train "$tiny" "${base[@]}" "${args[@]}" --set run.dir="$tmp/$name"
  mpi 4 0 train "$tiny" "${base[@]}" "${args[@]}" "${full[@]}" --set run.dir="$tmp/${name}_full"
  same_run "$tmp/$name" "$tmp/${name}_full"
  mpi 4 0 train "$tiny" "${base[@]}" "${args[@]}" "${selective[@]}" --set run.dir="$tmp/${name}_selective"
  same_run "$tmp/$name" "$tmp/${name}_selective"
  mpi 4 0 train "$tiny" "${base[@]}" "${args[@]}" "${as_needed[@]}" --set run.dir="$tmp/${name}_auto"
  same_run "$tmp/$name" "$tmp/${name}_auto"
  recomputed "$tmp/${name}_auto" 0  # 1 GiB holds every layer's arrays
done
grep -q "train.recompute: full: one layer's saved arrays and the inputs of 2 layer(s) a pass" \
  "$tmp/dp_full/trident.log" || fail "the log does not describe the recomputation"
grep -q '"strategy":"flexsp"' "$tmp/flexsp_full/metrics.jsonl" || fail "FlexSP did not run"
grep -q "train.recompute: selective: the layers' norm and GELU outputs share one slot" \
  "$tmp/dp_selective/trident.log" || fail "the log does not describe selective recomputation"
# the saved arrays of 3 layers against 1 layer's and 2 inputs (full), or without their norms and GELU (selective)
"$python" - "$tmp"/dp{,_selective,_full}/metrics.jsonl <<'PY' || fail "recomputation does not lower the peak"
import json, sys
a, s, f = ([json.loads(l)["peak_mem_bytes"] for l in open(p)] for p in sys.argv[1:4])
assert all(z < y < x for x, y, z in zip(a, s, f)), (a, s, f)
PY

# auto in 5 MiB (6 MiB for the hybrid, 4 MiB at stage 3): a rank holds full's tokens; passes of 256 tokens (one
# micro-batch) do not fit every layer's arrays and recompute all but the last layer (the hybrid one of them), with
# full's losses bit for bit, the group's ranks alike (FlexSP's too); passes of 128 fit them and recompute none, with
# the straight run's losses.
one=(--set train.micro_batches=1 --set train.steps=3)
layouts=("dp --set parallel.strategy=dp --set device.memory_gb=0.005"
         "lasp2 ${sp[*]} ${linear[*]} --set parallel.lasp.variant=lasp2 --set parallel.sp.size=2 --set device.memory_gb=0.005"
         "ulysses ${sp[*]} --set parallel.sp.method=ulysses --set parallel.sp.size=4 --set device.memory_gb=0.005"
         "hybrid ${sp[*]} --set model.attention=hybrid --set model.layers=LSL --set parallel.sp.method=lasp --set parallel.lasp.variant=lasp2 --set parallel.sp.size=2 --set device.memory_gb=0.006"
         "flexsp --set parallel.strategy=flexsp --set parallel.select.mode=model --set parallel.select.profile=$tmp/node4.yaml --set device.memory_gb=0.005"
         "zero3 --set parallel.strategy=dp --set parallel.zero.stage=3 --set device.memory_gb=0.004")
for layout in "${layouts[@]}"; do
  split_layout "$layout"
  mpi 4 0 train "$tiny" "${base[@]}" "${args[@]}" "${one[@]}" "${full[@]}" --set run.dir="$tmp/${name}_one_full"
  mpi 4 0 train "$tiny" "${base[@]}" "${args[@]}" "${one[@]}" "${as_needed[@]}" --set run.dir="$tmp/${name}_one_auto"
  same_run "$tmp/${name}_one_full" "$tmp/${name}_one_auto"
  [[ $(capacity "$tmp/${name}_one_auto") == $(capacity "$tmp/${name}_one_full") ]] ||
    fail "$name: auto holds $(capacity "$tmp/${name}_one_auto") tokens a rank, full $(capacity "$tmp/${name}_one_full")"
  recomputed "$tmp/${name}_one_auto" "$([[ $name == hybrid ]] && echo 1 || echo 2)"
done
grep -q "train.recompute: auto: each pass recomputes the forward of only as many of the first 2 layer(s) as its tokens need to fit .* of activations; a pass of up to 181 tokens recomputes none" "$tmp/dp_one_auto/trident.log" ||
  fail "the log does not say which passes auto leaves whole"
two=(--set parallel.strategy=dp --set device.memory_gb=0.005 --set train.micro_batches=2 --set train.steps=3)
mpi 4 0 train "$tiny" "${base[@]}" "${two[@]}" --set run.dir="$tmp/dp_two"
mpi 4 0 train "$tiny" "${base[@]}" "${two[@]}" "${as_needed[@]}" --set run.dir="$tmp/dp_two_auto"
same_run "$tmp/dp_two" "$tmp/dp_two_auto"
recomputed "$tmp/dp_two_auto" 0
# keeping every layer's arrays, a pass of 256 tokens does not fit 5 MiB: the error names the way out
split_layout "${layouts[0]}"
mpi 4 1 train "$tiny" "${base[@]}" "${args[@]}" "${one[@]}" --set run.dir="$tmp/dp_one"
grep -q "above its activation capacity of 181 tokens; .*train.recompute: auto" "$tmp/err" ||
  fail "a batch that does not fit does not point at train.recompute"

# A run checkpointed without recomputation resumes with it, bit for bit.
ckpt=(--set parallel.strategy=dp --set checkpoint.every=3)
mpi 2 0 train "$tiny" "${base[@]}" "${ckpt[@]}" --set run.dir="$tmp/straight"
mkdir -p "$tmp/resumed/checkpoints"
cp -r "$tmp/straight/checkpoints/step_00000003" "$tmp/resumed/checkpoints/"
mpi 2 0 train "$tiny" "${base[@]}" "${ckpt[@]}" "${full[@]}" --set run.dir="$tmp/resumed"
resumed_same "$tmp/straight" "$tmp/resumed" 3 5

# The capacity grows by what recomputation frees: in 5 MiB a rank holds more tokens.
small=(--set device.memory_gb=0.005 --set train.micro_batches=4 --set train.steps=2 --set parallel.strategy=dp)
mpi 4 0 train "$tiny" "${base[@]}" "${small[@]}" --set run.dir="$tmp/cap"
mpi 4 0 train "$tiny" "${base[@]}" "${small[@]}" "${full[@]}" --set run.dir="$tmp/cap_full"
mpi 4 0 train "$tiny" "${base[@]}" "${small[@]}" "${selective[@]}" --set run.dir="$tmp/cap_selective"
[[ $(capacity "$tmp/cap") -lt $(capacity "$tmp/cap_selective") &&
   $(capacity "$tmp/cap_selective") -lt $(capacity "$tmp/cap_full") ]] ||
  fail "a rank holds $(capacity "$tmp/cap") tokens keeping everything, $(capacity "$tmp/cap_selective") selective, \
$(capacity "$tmp/cap_full") full"

# A model a strategy family places itself refuses it; so does a value not offered.
mpi 2 2 train "$tiny" "${base[@]}" "${full[@]}" --set parallel.strategy=pipeline --set run.dir="$tmp/refused"
grep -q "config error: train.recompute: full recomputes a resident model's layers, but parallel.strategy: pipeline" \
  "$tmp/err" || fail "the pipeline does not refuse train.recompute naming it"
run 2 train "$tiny" "${full[@]}" --set parallel.strategy=atom --set parallel.atom.sub_models=2 --set run.dir="$tmp/refused"
grep -q "config error: train.recompute: full" "$tmp/err" || fail "ATOM's swapped model does not refuse train.recompute"
mpi 2 2 train "$tiny" "${base[@]}" "${selective[@]}" --set parallel.strategy=pipeline --set run.dir="$tmp/refused"
grep -q "config error: train.recompute: selective recomputes a resident model's layers" "$tmp/err" ||
  fail "the pipeline does not refuse selective recomputation"
run 2 train "$tiny" --set train.recompute=some --set run.dir="$tmp/refused"
stderr_line "trident: config error:" "train.recompute: 'some' is not allowed"
echo "test_recompute: $checks checks passed"
