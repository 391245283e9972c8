#!/usr/bin/env bash
# Checkpoint directories open with Hugging Face transformers as they are: every checkpoint `trident train` writes
# holds a config.json beside model.safetensors; a softmax checkpoint loads strictly with
# GPT2LMHeadModel.from_pretrained(dir) and gives the loss Trident computes at the same weights on the same documents;
# a linear run's config.json names its block and options. `trident ckpt` accepts checkpoints with the file and those
# written before it, and catches a damaged one. The transformers part exits 77 (skipped) where .deps/python lacks
# transformers (scripts/install-deps.sh installs it); everything before it runs regardless.
# Usage: TRIDENT=/path/to/trident CHECKPOINT_LOSS=/path/to/trident_checkpoint_loss PYDEPS=.deps/python \
#        bash tests/app/test_hf_checkpoint.sh tests/app/configs
set -u
configs=${1:?usage: TRIDENT=... CHECKPOINT_LOSS=... PYDEPS=... bash test_hf_checkpoint.sh CONFIG_DIR}
checkpoint_loss=${CHECKPOINT_LOSS:?set CHECKPOINT_LOSS to the trident_checkpoint_loss binary}
pydeps=${PYDEPS:?set PYDEPS to .deps/python of the repository}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export OMP_NUM_THREADS=2
tiny="$configs/tiny_train.yaml"

# py WHAT ARGS... <<'PY': runs a Python script (stdin) with Debian's python3 and .deps/python; fails naming WHAT.
py() {
  local what=$1
  shift
  checks=$((checks + 1))
  echo "check $checks: $what"
  PYTHONPATH="$pydeps" /usr/bin/python3 - "$@" >"$tmp/out" 2>"$tmp/err" || fail "$what"
  cat "$tmp/out"
}

# A softmax run of 12 steps with a checkpoint every 5 steps: steps 5, 10 and, at the end, 12 (the final weights).
run 0 train "$tiny" --set run.dir="$tmp/softmax" --set train.steps=12 --set checkpoint.every=5 --set train.eval_every=0
ckpts=$tmp/softmax/checkpoints
last=$ckpts/step_00000012
for step in 00000005 00000010 00000012; do
  [[ -s $ckpts/step_$step/config.json ]] || fail "checkpoint step_$step has no config.json"
done
[[ $(cat "$ckpts/latest") == step_00000012 ]] || fail "latest is not the final checkpoint"
cmp -s "$last/model.safetensors" "$tmp/softmax/model_final.safetensors" ||
  fail "the last checkpoint's weights are not the final weights"
run 0 ckpt verify "$last"
stdout_has "OK $last"
run 0 ckpt inspect "$last"
stdout_has "config.json" "model.safetensors" "crc32 "

# config.json: GPT-2 with the run's shape (tiny_train.yaml: 2 layers, 64 wide, 4 heads, 64 tokens, 64 positions).
py "the softmax config.json is GPT-2's with the run's shape" "$last/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
want = {
    "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": 64, "n_positions": 64, "n_embd": 64,
    "n_layer": 2, "n_head": 4, "n_inner": None, "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5,
    "tie_word_embeddings": True, "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0,
    "scale_attn_weights": True, "scale_attn_by_inverse_layer_idx": False, "reorder_and_upcast_attn": False,
    "torch_dtype": "float32",
}
bad = {k: (c.get(k, "<missing>"), v) for k, v in want.items() if k not in c or c[k] != v}
assert not bad, f"config.json differs (found, wanted): {bad}"
for key in ("attention", "qk_activation", "output_gate", "output_norm"):
    assert key not in c, f"a softmax config.json has the linear key {key}"
PY

# A linear run with every block option away from its default: config.json names the block and its options.
run 0 train "$tiny" --set run.dir="$tmp/linear" --set train.steps=2 --set train.warmup_steps=1 \
  --set train.eval_every=0 --set model.attention=linear --set model.n_head=2 --set model.linear_chunk=16 \
  --set model.decay_layer_scaling=false --set model.linear.qk_activation=elu1 --set model.linear.output_gate=false
linear=$tmp/linear/checkpoints/step_00000002
[[ -s $linear/config.json ]] || fail "the linear checkpoint has no config.json"
py "the linear config.json names the block and its options" "$linear/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
want = {
    "architectures": ["TridentLinearLMHeadModel"], "model_type": "trident_linear", "attention": "linear",
    "qk_activation": "elu1", "output_gate": False, "output_norm": "hidden", "decay_layer_scaling": False,
    "linear_chunk": 16, "vocab_size": 64, "n_positions": 64, "n_embd": 64, "n_layer": 2, "n_head": 2,
    "n_inner": None, "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5, "tie_word_embeddings": True,
    "torch_dtype": "float32",
}
bad = {k: (c.get(k, "<missing>"), v) for k, v in want.items() if k not in c or c[k] != v}
assert not bad, f"config.json differs (found, wanted): {bad}"
assert "core/model/README.md" in c.get("description", ""), "no description pointing to the block's definition"
PY
run 0 ckpt verify "$linear"
stdout_has "OK $linear"

# A checkpoint written before config.json existed (no file, no record) verifies, inspects and resumes; the resumed
# run's checkpoint has one.
mkdir -p "$tmp/old/checkpoints"
cp -r "$ckpts/step_00000010" "$tmp/old/checkpoints/"
old=$tmp/old/checkpoints/step_00000010
rm "$old/config.json"
py "drop config.json from trainer_state.json" "$old/trainer_state.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
del s["files"]["config.json"]
del s["crc32"]  # recorded since later still
json.dump(s, open(sys.argv[1], "w"), indent=2)
PY
run 0 ckpt verify "$old"
stdout_has "OK $old"
run 0 ckpt inspect "$old"
stdout_has "model.safetensors" "optimizer.safetensors"
run 0 train "$tiny" --set run.dir="$tmp/old" --set train.steps=12 --set train.eval_every=0
grep -q "resuming from $old" "$tmp/old/trident.log" || fail "the run did not resume from the old checkpoint"
[[ -s $tmp/old/checkpoints/step_00000012/config.json ]] || fail "the resumed run's checkpoint has no config.json"
cmp -s "$tmp/old/checkpoints/step_00000012/model.safetensors" "$last/model.safetensors" ||
  fail "the run resumed from the old checkpoint ends on other weights"

# A recorded config.json that was changed or removed makes the checkpoint corrupt.
cp -r "$ckpts/step_00000005" "$tmp/edited"
sed -i 's/"n_head": 4/"n_head": 8/' "$tmp/edited/config.json"
run 1 ckpt verify "$tmp/edited"
stdout_has "CORRUPT" "config.json: crc32"
rm "$tmp/edited/config.json"
run 1 ckpt verify "$tmp/edited"
stdout_has "config.json: missing"

# Hugging Face transformers.
if ! PYTHONPATH="$pydeps" /usr/bin/python3 -c "import transformers; from transformers import GPT2LMHeadModel" \
  2>"$tmp/err"; then
  echo "SKIP: transformers does not import from $pydeps with /usr/bin/python3 ($(tail -n 1 "$tmp/err")); run" \
    "scripts/install-deps.sh to install it. The $checks checks before this passed."
  exit 77
fi

# Documents of 64 (max_seq_len), 40, 17 and 2 tokens; Trident packs them into one batch, transformers runs each alone.
/usr/bin/python3 - "$tmp/documents.txt" <<'PY' || fail "cannot write the documents"
import random, sys
rng = random.Random(5)
with open(sys.argv[1], "w") as f:
    for n in (64, 40, 17, 2):
        f.write(" ".join(str(rng.randrange(64)) for _ in range(n)) + "\n")
PY
checks=$((checks + 1))
echo "check $checks: trident_checkpoint_loss $last"
"$checkpoint_loss" "$last" "$tmp/documents.txt" >"$tmp/out" 2>"$tmp/err" || fail "trident_checkpoint_loss failed"
read -r _ trident_loss _ trident_targets <"$tmp/out"
echo "Trident: loss $trident_loss over $trident_targets tokens"

py "GPT2LMHeadModel.from_pretrained loads the checkpoint strictly and gives Trident's loss" \
  "$last" "$tmp/documents.txt" "$trident_loss" "$trident_targets" <<'PY'
import sys
import torch
from transformers import GPT2LMHeadModel
directory, documents, trident_loss, trident_targets = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
model, info = GPT2LMHeadModel.from_pretrained(directory, output_loading_info=True)
# Strict: every stored tensor is used and every weight comes from the file; transformers itself ties lm_head to wte
# and builds the causal-mask buffers.
missing = [k for k in info["missing_keys"]
           if k != "lm_head.weight" and not k.endswith((".attn.bias", ".attn.masked_bias"))]
print("loading info:", info)
assert not missing and not info["unexpected_keys"] and not info["mismatched_keys"] and not info["error_msgs"], info
assert model.lm_head.weight.data_ptr() == model.transformer.wte.weight.data_ptr(), "lm_head is not tied to wte"
assert (model.config.n_head, model.config.n_layer, model.config.n_embd) == (4, 2, 64), model.config
assert next(model.parameters()).dtype == torch.float32
model.eval()
total, targets = 0.0, 0
with torch.no_grad():
    for line in open(documents):
        ids = torch.tensor([[int(t) for t in line.split()]])
        logits = model(ids).logits[0, :-1].double()
        total += torch.nn.functional.cross_entropy(logits, ids[0, 1:], reduction="sum").item()
        targets += ids.shape[1] - 1
loss = total / targets
diff = abs(loss - trident_loss)
print(f"transformers {loss:.10f}, Trident {trident_loss:.10f}: difference {diff:.2e} ({diff / loss:.2e} relative)")
assert targets == trident_targets, (targets, trident_targets)
assert diff <= 1e-5 * trident_loss, "the losses differ"
PY

echo "all $checks checks passed"
