#!/usr/bin/env bash
# parallel.zero.stage: 1, 2 and 3 end to end under mpirun (oversubscribed): each rank holds AdamW's moments of its range
# of the parameters (and at stage 2 its range's gradient alone, at stage 3 its weights too; stages 2 and 3 are
# described where they start below); dp (on 2 and 3 ranks, with a parameter count whose 16-float units 3 ranks share unevenly), LASP-2 (sp 2),
# Ulysses (sp 4), a hybrid (LASP-2 + Ulysses), parallel.zero.group: node and FlexSP train to stage 0's losses and final
# weights bit for bit; the freed bytes show in peak_mem_bytes and in the activation capacity; a stage-1 checkpoint
# holds every parameter's moments (stage 0's, byte for byte), resumes bit for bit on the same ranks, and continues the
# losses on 2 ranks at stage 0 and on 1 rank; ATOM, the pipeline and values out of range are configuration errors.
# Usage: TRIDENT=/path/to/trident bash tests/app/test_zero.sh tests/app/configs
set -u
configs=${1:?usage: TRIDENT=/path/to/trident bash test_zero.sh CONFIG_DIR}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
mpirun_env
tiny="$configs/tiny_train.yaml"  # softmax, 2 layers, n_head 4, 108,288 parameters
base=(--set train.eval_every=0 --set train.warmup_steps=2 --set train.steps=6 --set train.weight_decay=0.1)
stage1=(--set parallel.zero.stage=1)

# continues STRAIGHT RESUMED FIRST LAST TOL: the run resumed into RESUMED trained steps FIRST .. LAST, each with
# STRAIGHT's loss within relative TOL (another rank count sums in another order).
continues() {
  grep -q "resuming from" "$2/trident.log" || fail "$2 did not resume"
  "$python" - "$@" <<'PY' || fail "the run resumed in $2 does not continue $1's losses"
import json, sys
a = {r["step"]: r["loss"] for r in map(json.loads, open(sys.argv[1] + "/metrics.jsonl"))}
b = {r["step"]: r["loss"] for r in map(json.loads, open(sys.argv[2] + "/metrics.jsonl"))}
steps = list(range(int(sys.argv[3]), int(sys.argv[4]) + 1))
assert sorted(b) == steps and all(abs(a[s] - b[s]) <= float(sys.argv[5]) * abs(a[s]) for s in b), (a, b)
PY
}

# dp on 2 and 3 ranks: the moments of a rank's range only, the same training. With 65 tokens the model has 108,352
# parameters, 6,772 units of 16 floats: 3,386 a rank on 2 ranks, 2,258 + 2,257 + 2,257 on 3.
dp=(--set parallel.strategy=dp --set model.vocab_size=65)
for n in 2 3; do
  mpi $n 0 train "$tiny" "${base[@]}" "${dp[@]}" --set run.dir="$tmp/dp$n"
  mpi $n 0 train "$tiny" "${base[@]}" "${dp[@]}" "${stage1[@]}" --set run.dir="$tmp/dp${n}_z1"
  same_run "$tmp/dp$n" "$tmp/dp${n}_z1"
done
grep -q "holds AdamW's moments of parameters \[0, 54176) of 108352, sharded over 2 ranks (world)" \
  "$tmp/dp2_z1/trident.log" || fail "the log does not give rank 0's range"
grep -q "holds AdamW's moments of parameters \[72240, 108352) of 108352, sharded over 3 ranks" \
  "$tmp/dp3_z1/trident.log" || fail "the log does not give rank 2's range of 3"
# rank 0's peak: its moments are 8 bytes for each of its 54,176 parameters instead of all 108,352
"$python" - "$tmp/dp2/metrics.jsonl" "$tmp/dp2_z1/metrics.jsonl" <<'PY' || fail "stage 1 does not free the moments"
import json, sys
a, b = ([json.loads(l)["peak_mem_bytes"] for l in open(p)] for p in sys.argv[1:3])
assert all(x - y == 8 * (108352 - 54176) for x, y in zip(a, b)), (a, b)
PY

# 4 ranks: LASP-2 on groups of 2 (linear), Ulysses over 4 (softmax), a hybrid's LASP-2 + Ulysses on groups of 2,
# and parallel.zero.group: node (one node here: the world).
sp=(--set parallel.strategy=sp --set parallel.lasp.variant=lasp2)
layouts=("lasp2 --set model.attention=linear --set parallel.sp.method=lasp --set parallel.sp.size=2"
         "ulysses --set parallel.sp.method=ulysses --set parallel.sp.size=4"
         "hybrid --set model.attention=hybrid --set model.layers=LS --set parallel.sp.method=lasp --set parallel.sp.size=2"
         "node --set parallel.strategy=dp --set parallel.zero.group=node")
for layout in "${layouts[@]}"; do
  split_layout "$layout"
  mpi 4 0 train "$tiny" "${base[@]}" "${sp[@]}" "${args[@]}" --set run.dir="$tmp/${name}"
  mpi 4 0 train "$tiny" "${base[@]}" "${sp[@]}" "${args[@]}" "${stage1[@]}" --set run.dir="$tmp/${name}_z1"
  same_run "$tmp/$name" "$tmp/${name}_z1"
done
grep -q "sharded over 4 ranks (node)" "$tmp/node_z1/trident.log" || fail "the log does not name the node group"

# FlexSP, its plans a pure function of the batch (parallel.select.mode: model with a profile file).
node4_profile "$tmp/node4.yaml"
flexsp=(--set parallel.strategy=flexsp --set parallel.select.mode=model --set parallel.select.profile="$tmp/node4.yaml")
mpi 4 0 train "$tiny" "${base[@]}" "${flexsp[@]}" --set run.dir="$tmp/flexsp"
mpi 4 0 train "$tiny" "${base[@]}" "${flexsp[@]}" "${stage1[@]}" --set run.dir="$tmp/flexsp_z1"
same_run "$tmp/flexsp" "$tmp/flexsp_z1"
grep -q '"strategy":"flexsp"' "$tmp/flexsp_z1/metrics.jsonl" || fail "FlexSP did not run"

# The capacity grows by the freed moments: in 3 MiB a rank holds more tokens at stage 1.
small=(--set device.memory_gb=0.003 --set train.micro_batches=4 --set train.steps=2 --set parallel.strategy=dp)
mpi 4 0 train "$tiny" "${base[@]}" "${small[@]}" --set run.dir="$tmp/cap"
mpi 4 0 train "$tiny" "${base[@]}" "${small[@]}" "${stage1[@]}" --set run.dir="$tmp/cap_z1"
[[ $(capacity "$tmp/cap") -lt $(capacity "$tmp/cap_z1") ]] ||
  fail "stage 1 holds $(capacity "$tmp/cap_z1") tokens a rank, stage 0 $(capacity "$tmp/cap")"

# Checkpoints: stage 1 on 4 ranks writes each rank's range of the moments in a file of its own (together stage 0's
# moments, byte for byte), resumes bit for bit on the same ranks, and on 2 ranks at stage 0 and on 1 rank continues
# the losses.
ckpt=(--set train.steps=6 --set checkpoint.every=3 --set parallel.strategy=dp)
mpi 4 0 train "$tiny" "${base[@]}" "${ckpt[@]}" --set run.dir="$tmp/ck0"
mpi 4 0 train "$tiny" "${base[@]}" "${ckpt[@]}" "${stage1[@]}" --set run.dir="$tmp/ck1"
"$python" - "$tmp/ck0/checkpoints/step_00000003" "$tmp/ck1/checkpoints/step_00000003" <<'PY' ||
import json, struct, sys
def tensors(path):  # safetensors: an 8-byte header length, the JSON header, the data
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    return {k: data[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]] for k, v in header.items()
            if k != "__metadata__"}
whole = tensors(sys.argv[1] + "/optimizer.safetensors")
state = json.load(open(sys.argv[2] + "/trainer_state.json"))
shards = state["optimizer_shards"]
assert [s["file"] for s in shards] == [f"optimizer-{i:05d}-of-00004.safetensors" for i in range(4)], shards
assert all(s["file"] in state["files"] for s in shards) and "optimizer.safetensors" not in state["files"], state
parts = [tensors(sys.argv[2] + "/" + s["file"]) for s in shards]
for k in ("m", "v"):
    assert b"".join(p[k] for p in parts) == whole[k], k
assert all(p["step"] == whole["step"] for p in parts)
PY
  fail "stage 1's checkpoint does not hold stage 0's moments in one file a rank"
run 0 ckpt verify "$tmp/ck1/checkpoints/step_00000003"
run 0 ckpt inspect "$tmp/ck1/checkpoints/step_00000003"
stdout_has "optimizer-00003-of-00004.safetensors holds AdamW's moments of parameters [81216, 108288)" \
  "optimizer-00000-of-00004.safetensors (3 tensors, 54145 elements)"
# a shard that is gone or cut short is caught before a resume trusts it
cp -r "$tmp/ck1/checkpoints/step_00000003" "$tmp/damaged"
truncate -s -8 "$tmp/damaged/optimizer-00002-of-00004.safetensors"
run 1 ckpt verify "$tmp/damaged"
stdout_has "optimizer-00002-of-00004.safetensors:" "bytes, but trainer_state.json records"
rm "$tmp/damaged/optimizer-00001-of-00004.safetensors"
run 1 ckpt verify "$tmp/damaged"
stdout_has "optimizer-00001-of-00004.safetensors: missing"
# resumes RUN TAG N STAGE same|close: RUN's step-3 checkpoint, copied into a run directory of its own, resumed on N
# ranks at parallel.zero.stage STAGE: bit for bit (the ranks and stage it was written with), or within 1e-5.
resumes() {
  local dir="$tmp/resumed_$2"
  mkdir -p "$dir/checkpoints"
  cp -r "$1/checkpoints/step_00000003" "$dir/checkpoints/"
  mpi "$3" 0 train "$tiny" "${base[@]}" "${ckpt[@]}" --set parallel.zero.stage="$4" --set run.dir="$dir"
  if [[ $5 == same ]]; then resumed_same "$1" "$dir" 3 5; else continues "$1" "$dir" 3 5 1e-5; fi
}
resumes "$tmp/ck1" z1_on_4 4 1 same
resumes "$tmp/ck1" z1_on_2 2 0 close
resumes "$tmp/ck1" z1_on_1 1 0 close

# Stage 2: each range's gradient is reduce-scattered as its backward ends and a rank keeps its own range's. On a model of
# 8 layers (408,256 parameters with 65 tokens) the shard and the windows it is reduced through take less than the whole
# gradient. dp on 2 and 3 ranks with 3 micro-batches a step (each pass reduced apart), LASP-2 sp=2, Ulysses sp=4, a
# hybrid and FlexSP train stage 0's losses within 1e-6 (the same sums in another order), two runs bit for bit alike.
stage2=(--set parallel.zero.stage=2)
deep=(--set model.n_layer=8 --set model.vocab_size=65)
for n in 2 3; do
  mb=(--set parallel.strategy=dp --set train.micro_batches=3)
  mpi $n 0 train "$tiny" "${base[@]}" "${deep[@]}" "${mb[@]}" --set run.dir="$tmp/z2_dp$n"
  mpi $n 0 train "$tiny" "${base[@]}" "${deep[@]}" "${mb[@]}" "${stage2[@]}" --set run.dir="$tmp/z2_dp${n}_z2"
  close "$tmp/z2_dp$n" "$tmp/z2_dp${n}_z2" 1e-6
done
mpi 2 0 train "$tiny" "${base[@]}" "${deep[@]}" "${mb[@]}" "${stage2[@]}" --set run.dir="$tmp/z2_dp2_again"
same_run "$tmp/z2_dp2_z2" "$tmp/z2_dp2_again"
grep -q "holds AdamW's moments and the gradient of parameters \[0, 204128) of 408256, sharded over 2 ranks" \
  "$tmp/z2_dp2_z2/trident.log" || fail "the log does not say stage 2 keeps the range's gradient"
# peak_drop STAGE0 STAGED STAGE: rank 0's peak on the 8-layer model over 2 ranks at STAGE (2 or 3) is stage 0's less
# 8 bytes of moments and 4 of gradient for each parameter outside its range, less the gradients' windows (the final
# norm's and the embeddings', two layers', and the parts of them a reduction brings this rank); at stage 3 also less 4
# bytes of weights for each parameter outside its range, less the weights' windows (the final norm's, the
# embeddings', two layers').
peak_drop() {
  "$python" - "$1/metrics.jsonl" "$2/metrics.jsonl" "$3" <<'PY' || fail "stage $3 does not free what it should"
import json, sys
C, V, T, L = 64, 65, 64, 8
layer, final_norm, embeddings = 12 * C * C + 13 * C, 2 * C, V * C + T * C
P = L * layer + final_norm + embeddings
owned = (P // 16 + 1) // 2 * 16  # rank 0's 16-float units of 2 ranks
windows = owned + final_norm + embeddings + 2 * layer + min(final_norm, owned) + min(embeddings, owned) + 2 * min(layer, owned)
drop = 8 * (P - owned) + 4 * P - 4 * windows
if sys.argv[3] == "3":
    drop += 4 * P - 4 * (owned + final_norm + embeddings + 2 * layer)
a, b = ([json.loads(l)["peak_mem_bytes"] for l in open(p)] for p in sys.argv[1:3])
assert all(x - y == drop for x, y in zip(a, b)), (a, b, P, owned)
PY
}
peak_drop "$tmp/z2_dp2" "$tmp/z2_dp2_z2" 2
for layout in "${layouts[@]:0:3}"; do
  split_layout "$layout"
  mpi 4 0 train "$tiny" "${base[@]}" "${sp[@]}" "${args[@]}" "${stage2[@]}" --set run.dir="$tmp/${name}_z2"
  close "$tmp/$name" "$tmp/${name}_z2" 1e-6
done
mpi 4 0 train "$tiny" "${base[@]}" "${flexsp[@]}" "${stage2[@]}" --set run.dir="$tmp/flexsp_z2"
close "$tmp/flexsp" "$tmp/flexsp_z2" 1e-6
# with the layers' recomputation: selective and full, beside it
for recompute in selective full; do
  mpi 2 0 train "$tiny" "${base[@]}" "${deep[@]}" "${mb[@]}" "${stage2[@]}" --set train.recompute=$recompute \
    --set run.dir="$tmp/z2_$recompute"
  close "$tmp/z2_dp2" "$tmp/z2_$recompute" 1e-6
done
# The capacity grows by the freed gradients: in 8 MB a rank of 4 holds more tokens at stage 2 than at stage 1.
small2=(--set device.memory_gb=0.008 --set train.micro_batches=4 --set train.steps=2 --set parallel.strategy=dp)
mpi 4 0 train "$tiny" "${base[@]}" "${deep[@]}" "${small2[@]}" "${stage1[@]}" --set run.dir="$tmp/cap2_z1"
mpi 4 0 train "$tiny" "${base[@]}" "${deep[@]}" "${small2[@]}" "${stage2[@]}" --set run.dir="$tmp/cap2_z2"
[[ $(capacity "$tmp/cap2_z1") -lt $(capacity "$tmp/cap2_z2") ]] ||
  fail "stage 2 holds $(capacity "$tmp/cap2_z2") tokens a rank, stage 1 $(capacity "$tmp/cap2_z1")"
# A stage-2 checkpoint is stage 1's layout: it resumes bit for bit at stage 2 on the same ranks, and at stage 1 on 2.
mpi 4 0 train "$tiny" "${base[@]}" "${ckpt[@]}" "${stage2[@]}" --set run.dir="$tmp/ck2"
run 0 ckpt verify "$tmp/ck2/checkpoints/step_00000003"
resumes "$tmp/ck2" z2_on_4 4 2 same
resumes "$tmp/ck2" z2_on_2 2 1 close

# Stage 3: each rank keeps its range's weights too; each layer's are gathered from the ranges before its forward and
# again before its backward (the embeddings and the final norm once a pass). dp on 2 and 3 ranks (3 micro-batches, and
# an evaluation every 3 steps: its forward passes gather too), LASP-2 sp=2, Ulysses sp=4, a hybrid, FlexSP and auto
# train stage 0's losses and evaluation losses within 1e-6 and its final weights within 2e-4 (AdamW's normalised step
# turns a last-bit difference in a near-zero gradient into one in an lr-sized step); two runs alike bit for bit.
stage3=(--set parallel.zero.stage=3)
evals=(--set train.eval_every=3)
# near STRAIGHT STAGED: the losses and evaluation losses within 1e-6, the final weights within 2e-4.
near() {
  "$python" - "$1" "$2" <<'PY' || fail "$2 does not train $1's losses and weights"
import json, struct, sys
def records(d):
    return [(r["loss"], r.get("eval_loss")) for r in map(json.loads, open(d + "/metrics.jsonl"))]
def weights(d):
    data = open(d + "/model_final.safetensors", "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    body = data[8 + n:]
    return struct.unpack(f"<{len(body) // 4}f", body)
a, b = records(sys.argv[1]), records(sys.argv[2])
assert len(a) == len(b), (a, b)
for (la, ea), (lb, eb) in zip(a, b):
    assert abs(la - lb) <= 1e-6 * abs(la) and (ea is None) == (eb is None), (a, b)
    assert ea is None or abs(ea - eb) <= 1e-6 * abs(ea), (a, b)
wa, wb = weights(sys.argv[1]), weights(sys.argv[2])
assert len(wa) == len(wb) and max(abs(x - y) for x, y in zip(wa, wb)) <= 2e-4
PY
}
for n in 2 3; do
  mb=(--set parallel.strategy=dp --set train.micro_batches=3)
  mpi $n 0 train "$tiny" "${base[@]}" "${deep[@]}" "${mb[@]}" "${evals[@]}" --set run.dir="$tmp/z3_dp$n"
  mpi $n 0 train "$tiny" "${base[@]}" "${deep[@]}" "${mb[@]}" "${evals[@]}" "${stage3[@]}" --set run.dir="$tmp/z3_dp${n}_z3"
  near "$tmp/z3_dp$n" "$tmp/z3_dp${n}_z3"
done
mpi 2 0 train "$tiny" "${base[@]}" "${deep[@]}" "${mb[@]}" "${evals[@]}" "${stage3[@]}" --set run.dir="$tmp/z3_again"
same_run "$tmp/z3_dp2_z3" "$tmp/z3_again"
grep -q "holds AdamW's moments, the gradient and the weights of parameters \[0, 204128) of 408256, sharded over 2" \
  "$tmp/z3_dp2_z3/trident.log" || fail "the log does not say stage 3 keeps the range's weights"
peak_drop "$tmp/z3_dp2" "$tmp/z3_dp2_z3" 3
# each step records the time rank 0 waited for the stage's collectives (none below stage 2)
"$python" - "$tmp/z3_dp2/metrics.jsonl" "$tmp/z3_dp2_z3/metrics.jsonl" <<'PY' || fail "zero_wait_ms is not the step's"
import json, sys
a, b = ([json.loads(l) for l in open(p)] for p in sys.argv[1:3])
assert all("zero_wait_ms" not in r for r in a), a
assert all(0 <= r["zero_wait_ms"] <= r["step_ms"] for r in b), b
PY
for layout in "${layouts[@]:0:3}"; do
  split_layout "$layout"
  mpi 4 0 train "$tiny" "${base[@]}" "${sp[@]}" "${args[@]}" "${stage3[@]}" --set run.dir="$tmp/${name}_z3"
  near "$tmp/$name" "$tmp/${name}_z3"
done
mpi 4 0 train "$tiny" "${base[@]}" "${flexsp[@]}" "${evals[@]}" --set run.dir="$tmp/flexsp_e"
mpi 4 0 train "$tiny" "${base[@]}" "${flexsp[@]}" "${evals[@]}" "${stage3[@]}" --set run.dir="$tmp/flexsp_z3"
near "$tmp/flexsp_e" "$tmp/flexsp_z3"
auto=(--set parallel.strategy=auto --set parallel.select.mode=model --set parallel.select.profile="$tmp/node4.yaml")
mpi 4 0 train "$tiny" "${base[@]}" "${auto[@]}" "${evals[@]}" --set run.dir="$tmp/auto"
mpi 4 0 train "$tiny" "${base[@]}" "${auto[@]}" "${evals[@]}" "${stage3[@]}" --set run.dir="$tmp/auto_z3"
near "$tmp/auto" "$tmp/auto_z3"
# The capacity grows by the freed weights: in 8 MB a rank of 4 holds more tokens at stage 3 than at stage 2.
mpi 4 0 train "$tiny" "${base[@]}" "${deep[@]}" "${small2[@]}" "${stage3[@]}" --set run.dir="$tmp/cap2_z3"
[[ $(capacity "$tmp/cap2_z2") -lt $(capacity "$tmp/cap2_z3") ]] ||
  fail "stage 3 holds $(capacity "$tmp/cap2_z3") tokens a rank, stage 2 $(capacity "$tmp/cap2_z2")"
# The lead gathers the weights for what it writes: a stage-3 checkpoint is stage 1's layout, resumes bit for bit on the
# same ranks and stage, and its weights continue the losses on 2 ranks at stage 1 and from there on 1 rank at stage 0.
mpi 4 0 train "$tiny" "${base[@]}" "${ckpt[@]}" "${stage3[@]}" --set run.dir="$tmp/ck3"
run 0 ckpt verify "$tmp/ck3/checkpoints/step_00000003"
cmp -s "$tmp/ck3/model_init.safetensors" "$tmp/ck0/model_init.safetensors" || fail "stage 3 starts from other weights"
resumes "$tmp/ck3" z3_on_4 4 3 same
resumes "$tmp/ck3" z3_on_2 2 1 close
mkdir -p "$tmp/z3_chain/checkpoints"
cp -r "$tmp/resumed_z3_on_2/checkpoints/step_00000006" "$tmp/z3_chain/checkpoints/"
mpi 1 0 train "$tiny" "${base[@]}" "${ckpt[@]}" --set train.steps=8 --set run.dir="$tmp/z3_chain"
grep -q "resuming from .*step_00000006" "$tmp/z3_chain/trident.log" || fail "the chain did not resume at step 6"
# killed while writing its second checkpoint (every rank, SIGKILL), the run resumes from its first and trains the
# straight run's losses and final weights bit for bit
(TRIDENT_TEST_CHECKPOINT_DELAY_MS=2000 timeout 120 mpirun -np 4 "$trident" train "$tiny" "${base[@]}" "${ckpt[@]}" \
   "${stage3[@]}" --set run.dir="$tmp/killed3" >"$tmp/out" 2>"$tmp/err") &
for _ in $(seq 1 300); do [[ -d $tmp/killed3/checkpoints/step_00000006.tmp ]] && break; sleep 0.1; done
[[ -d $tmp/killed3/checkpoints/step_00000006.tmp ]] || fail "the slowed second checkpoint never started"
pkill -KILL -f "run.dir=$tmp/killed3"
wait
mpi 4 0 train "$tiny" "${base[@]}" "${ckpt[@]}" "${stage3[@]}" --set run.dir="$tmp/killed3"
grep -q "resuming from .*step_00000003" "$tmp/killed3/trident.log" || fail "the killed run did not resume at step 3"
same_run "$tmp/ck3" "$tmp/killed3"
# a text run samples from the gathered weights what stage 0 samples
printf 'the cat sat on the mat\n\nand the dog sat on a mat\n\n%.0s' {1..200} >"$tmp/text.txt"
text=(--set data.kind=text --set data.path="$tmp/text.txt" --set model.vocab_size=256 --set sample.tokens=24
      --set sample.prompt=the --set train.steps=3 --set parallel.strategy=dp)
mpi 2 0 train "$tiny" "${base[@]}" "${text[@]}" --set run.dir="$tmp/text_z0"
mpi 2 0 train "$tiny" "${base[@]}" "${text[@]}" "${stage3[@]}" --set run.dir="$tmp/text_z3"
"$python" - "$tmp/text_z0/trident.log" "$tmp/text_z3/trident.log" <<'PY' || fail "stage 3 samples another text"
import sys
def sample(path):
    text = open(path, "rb").read()
    at = text.index(b"sample (temperature")
    return text[at:].split(b"\n")[1]
a, b = sample(sys.argv[1]), sample(sys.argv[2])
assert a == b and a.startswith(b"the"), (a, b)
PY
# bf16: the gathered windows are rounded to the matmuls' copy after each gather; stage 0's losses within bf16's
# rounding of sums taken in another order
bf16=(--set train.precision=bf16 --set parallel.strategy=dp --set train.micro_batches=2)
mpi 2 0 train "$tiny" "${base[@]}" "${deep[@]}" "${bf16[@]}" --set run.dir="$tmp/bf16_z0"
mpi 2 0 train "$tiny" "${base[@]}" "${deep[@]}" "${bf16[@]}" "${stage3[@]}" --set run.dir="$tmp/bf16_z3"
close "$tmp/bf16_z0" "$tmp/bf16_z3" 1e-4

# Strategies whose ranks keep state of their own refuse a stage; so do values out of range.
for strategy in pipeline atom; do
  mpi 2 2 train "$tiny" "${base[@]}" "${stage1[@]}" --set parallel.strategy=$strategy --set run.dir="$tmp/refused"
  grep -q "config error: parallel.zero.stage: 1 does not apply to $strategy" "$tmp/err" ||
    fail "$strategy under stage 1 is not refused naming parallel.zero.stage"
done
for stage in 2 3; do
  mpi 2 2 train "$tiny" "${base[@]}" --set parallel.zero.stage=$stage --set parallel.strategy=atom --set run.dir="$tmp/refused"
  grep -q "config error: parallel.zero.stage: $stage does not apply to atom" "$tmp/err" ||
    fail "atom under stage $stage is not refused naming parallel.zero.stage"
done
run 2 train "$tiny" --set parallel.zero.stage=4 --set run.dir="$tmp/refused"
stderr_line "trident: config error:" "parallel.zero.stage: 4 is out of range"
run 2 train "$tiny" --set parallel.zero.group=rack --set run.dir="$tmp/refused"
stderr_line "trident: config error:" "parallel.zero.group: 'rack'"
echo "test_zero: $checks checks passed"
