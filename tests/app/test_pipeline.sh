#!/usr/bin/env bash
# parallel.strategy: pipeline, end to end: 2 and 4 stages train with the single rank's losses (within 1e-5), write a
# checkpoint's moments stage by stage, resume bit for bit on another stage count, evaluate and sample on text data; bad input is one clear line, exit 2.
# Usage: TRIDENT=/path/to/trident bash tests/app/test_pipeline.sh tests/app/configs
set -u
configs=${1:?usage: TRIDENT=/path/to/trident bash test_pipeline.sh CONFIG_DIR}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tiny="$configs/tiny_train.yaml"
model=(--set model.n_layer=4 --set train.steps=6 --set train.eval_every=3 --set train.micro_batches=4
       --set checkpoint.every=3)

export OMP_NUM_THREADS=2
run 0 train "$tiny" "${model[@]}" --set run.dir="$tmp/single" --set parallel.strategy=dp
# One stage: the whole model on one rank, the single rank's step.
run 0 train "$tiny" "${model[@]}" --set run.dir="$tmp/one" --set parallel.strategy=pipeline
close "$tmp/single" "$tmp/one" 1e-6
mpirun_env
for stages in 2 4; do
  mpi $stages 0 train "$tiny" "${model[@]}" --set run.dir="$tmp/pp$stages" --set parallel.strategy=pipeline
  close "$tmp/single" "$tmp/pp$stages" 1e-5
  grep -q "pipeline: stage 0 of $stages, layers \[0, $((4 / stages)))" "$tmp/pp$stages/trident.log" \
    || fail "the log does not name stage 0's layers"
done
/usr/bin/python3 - "$tmp/single/metrics.jsonl" "$tmp/pp4/metrics.jsonl" <<'PY' || fail "the pipeline's metrics are wrong"
import json, sys
single, pp = ([json.loads(l) for l in open(p)] for p in sys.argv[1:])
for a, b in zip(single, pp):
    assert b["strategy"] == "pipeline" and b["world_size"] == 4 and b["tokens"] == a["tokens"], b
    assert b["comm_bytes"] > 0 and abs(b["grad_norm"] - a["grad_norm"]) <= 1e-5 * a["grad_norm"], (a, b)
    assert ("eval_loss" in a) == ("eval_loss" in b), (a, b)
    if "eval_loss" in a: assert abs(a["eval_loss"] - b["eval_loss"]) <= 1e-5 * a["eval_loss"], (a, b)
PY

# A checkpoint's AdamW state is written by the stages, each its own layers' moments in a file of its own (nothing but
# the parameters crosses the network for it): four files whose ranges follow one another over the layout, and the
# checkpoint verifies.
/usr/bin/python3 - "$tmp/pp4/checkpoints/step_00000003" <<'PY' || fail "the stages did not write their own moments"
import json, os, sys
state = json.load(open(sys.argv[1] + "/trainer_state.json"))
shards = state["optimizer_shards"]
assert [s["file"] for s in shards] == [f"optimizer-{i:05d}-of-00004.safetensors" for i in range(4)], shards
assert shards[0]["offset"] == 0 and all(a["offset"] + a["numel"] == b["offset"] for a, b in zip(shards, shards[1:]))
assert all(s["numel"] > 0 for s in shards) and not os.path.exists(sys.argv[1] + "/optimizer.safetensors"), shards
PY
run 0 ckpt verify "$tmp/pp4/checkpoints/step_00000003"
# Resume: the step-3 checkpoint of the 4-stage run holds the whole model (rank 0's, settled) and the stages' moments,
# and 3 stages go on from it with the uninterrupted run's losses bit for bit (the same micro-batches, the same sums).
mkdir -p "$tmp/resumed/checkpoints"
cp -r "$tmp/pp4/checkpoints/step_00000003" "$tmp/resumed/checkpoints/"
mpi 3 0 train "$tiny" "${model[@]}" --set run.dir="$tmp/resumed" --set parallel.strategy=pipeline
grep -q "resuming from" "$tmp/resumed/trident.log" || fail "the pipeline did not resume"
/usr/bin/python3 - "$tmp/pp4/metrics.jsonl" "$tmp/resumed/metrics.jsonl" <<'PY' || fail "the resumed run diverged"
import json, sys
a, b = ([json.loads(l) for l in open(p)] for p in sys.argv[1:])
assert [r["loss"] for r in a[3:]] == [r["loss"] for r in b], (a, b)
PY

# Text data with a sample at the end: rank 0 holds the first stage and samples with the whole settled model.
for i in $(seq 1 100); do printf 'the quick brown fox %d jumps over the lazy dog\n%%\n' "$i"; done >"$tmp/corpus.txt"
mpi 2 0 train "$tiny" "${model[@]}" --set run.dir="$tmp/text" --set data.kind=text --set data.path="$tmp/corpus.txt" \
  --set 'data.separator="\n%\n"' --set model.vocab_size=256 --set sample.tokens=20 --set parallel.strategy=pipeline
grep -q "sample (temperature" "$tmp/text/trident.log" || fail "no sample in trident.log"

# Bad input: each one line, exit 2, before any step.
mpi 5 2 train "$tiny" "${model[@]}" --set run.dir="$tmp/bad1" --set parallel.strategy=pipeline
grep -qF "parallel.strategy: pipeline on 5 ranks needs at least one layer a stage; model.n_layer is 4" "$tmp/err" \
  || fail "5 stages of 4 layers not refused"
run 2 train "$tiny" "${model[@]}" --set run.dir="$tmp/bad2" --set parallel.strategy=pipeline --set device.backend=cuda
stderr_line "trident: config error:" "device.backend"

# trident plan: GPipe's estimate on a described node (one stage a device); more devices than layers are refused.
node4_profile "$tmp/node4.yaml"
run 0 plan "$tiny" "${model[@]}" --set parallel.strategy=pipeline --cluster "$tmp/node4.yaml" --json
/usr/bin/python3 - "$tmp/out" <<'PY' || fail "the pipeline's plan is wrong"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
assert rows, "no batch planned"
for r in rows:
    assert [o["strategy"] for o in r["candidates"]] == ["pipeline"] and r["candidates"][0]["time_s"] > 0, r
PY
run 2 plan "$tiny" "${model[@]}" --set parallel.strategy=pipeline --set model.n_layer=3 --cluster "$tmp/node4.yaml"
stderr_line "trident: config error:" "pipeline on 4 ranks needs at least one layer a stage"
[[ -e $tmp/bad1/metrics.jsonl || -e $tmp/bad2/metrics.jsonl ]] && fail "a refused run wrote metrics"

echo "PASS: $checks checks"
