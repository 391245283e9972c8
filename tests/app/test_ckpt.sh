#!/usr/bin/env bash
# `trident ckpt verify|inspect` as a user runs it: on real checkpoints (written by trident_make_checkpoint), on a
# save killed half-way, on corrupted files (exit 1) and on directories that are not checkpoints (exit 2).
# Usage: TRIDENT=/path/to/trident MAKE_CHECKPOINT=/path/to/trident_make_checkpoint bash tests/app/test_ckpt.sh
set -u
make_checkpoint=${MAKE_CHECKPOINT:?set MAKE_CHECKPOINT to the trident_make_checkpoint binary}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
run_dir=$tmp/run
ckpts=$run_dir/checkpoints

save() {  # save STEP: a checkpoint of step STEP in $run_dir
  "$make_checkpoint" "$run_dir" "$1" >"$tmp/out" 2>"$tmp/err" || fail "trident_make_checkpoint $1 failed"
}

# Not a checkpoint at all.
run 2 ckpt verify "$tmp/nowhere"
stderr_line "trident: config error:" "nowhere" "does not exist"
run 2 ckpt inspect "$tmp/nowhere"
stderr_line "trident: config error:" "does not exist"
mkdir "$tmp/empty"
run 2 ckpt verify "$tmp/empty"
stderr_line "trident: config error:" "neither a checkpoint directory" "nor a run directory"
touch "$tmp/file"
run 2 ckpt inspect "$tmp/file"
stderr_line "trident: config error:" "not a directory"
mkdir -p "$tmp/fresh/checkpoints"
run 2 ckpt verify "$tmp/fresh"
stderr_line "trident: config error:" "no checkpoints/latest"
run 2 ckpt
stderr_line "trident: usage error:"
run 2 ckpt verify
stderr_line "trident: usage error:"

# Good checkpoints, by checkpoint directory and by run directory (checkpoints/latest).
save 1
save 2
run 0 ckpt verify "$ckpts/step_00000001"
stdout_has "OK $ckpts/step_00000001"
run 0 ckpt verify "$run_dir"
stdout_has "checkpoints/latest of run" "OK $ckpts/step_00000002"
run 0 ckpt inspect "$run_dir"
stdout_has "step        2 (next step 2)" "world size  1" "model.safetensors (" "optimizer.safetensors (3 tensors"
stdout_has "transformer.wte.weight" "F32   [29, 16]" "m     F32   [" "step  I64   []" "crc32 "
stdout_has "config (resolved YAML)" "  n_layer: 2 "

# A save killed after model.safetensors: the half-written step_00000003.tmp is ignored, latest still names step 2.
TRIDENT_TEST_CHECKPOINT_DELAY_MS=60000 "$make_checkpoint" "$run_dir" 3 >/dev/null 2>&1 &
pid=$!
for _ in $(seq 300); do
  [[ -f $ckpts/step_00000003.tmp/model.safetensors ]] && break
  sleep 0.1
done
[[ -f $ckpts/step_00000003.tmp/model.safetensors ]] || fail "the delayed save did not start"
kill -KILL "$pid"
wait "$pid" 2>/dev/null
[[ ! -e $ckpts/step_00000003 ]] || fail "a killed save left a final-named checkpoint"
[[ $(cat "$ckpts/latest") == step_00000002 ]] || fail "latest changed by a killed save"
run 0 ckpt verify "$run_dir"
stdout_has "OK $ckpts/step_00000002"
save 3
[[ ! -e $ckpts/step_00000003.tmp ]] || fail "the next save did not remove the stale .tmp"
run 0 ckpt verify "$run_dir"
stdout_has "OK $ckpts/step_00000003"

# Corruption: a flipped bit, a truncated file, a missing trainer_state.json, latest naming nothing.
/usr/bin/python3 - "$ckpts/step_00000003/model.safetensors" <<'PY' || fail "cannot flip a bit"
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(-5, 2)
    byte = f.read(1)[0]
    f.seek(-5, 2)
    f.write(bytes([byte ^ 0x10]))
PY
run 1 ckpt verify "$run_dir"
stdout_has "CORRUPT $ckpts/step_00000003" "model.safetensors: crc32"
last_stderr_line "trident: error:" "step_00000003" "corrupt (1 problem)"
truncate -s -8 "$ckpts/step_00000002/optimizer.safetensors"
run 1 ckpt verify "$ckpts/step_00000002"
stdout_has "optimizer.safetensors:" "bytes, but trainer_state.json records"
rm "$ckpts/step_00000001/trainer_state.json"
run 1 ckpt verify "$ckpts/step_00000001"
stdout_has "trainer_state.json: missing"
run 1 ckpt inspect "$ckpts/step_00000001"
stdout_has "trainer_state.json: missing" "transformer.wte.weight"  # still shows what it can
last_stderr_line "trident: error:" "trident ckpt verify"
echo step_00000009 >"$ckpts/latest"
run 1 ckpt verify "$run_dir"
stderr_line "trident: error:" "step_00000009" "does not exist"

echo "all $checks checks passed"
