#!/usr/bin/env bash
# The CLI as a user runs it: exit codes (0 ok, 2 usage/config error) and one-line error messages.
# Usage: TRIDENT=/path/to/trident bash tests/app/test_cli.sh tests/app/configs
# Prints each check; stops with exit 1 at the first failure, showing the command's output.
set -u
configs=${1:?usage: TRIDENT=/path/to/trident bash test_cli.sh CONFIG_DIR}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

run 0 --help
stdout_has "Subcommands:" "config" "bench"
run 0 --version
stdout_has "trident 0.1.0"

run 2
stderr_line "trident: usage error:"
run 2 no-such-command
stderr_line "trident: usage error:"
run 2 --no-such-flag
stderr_line "trident: usage error:"
run 2 config
stderr_line "trident: usage error:"

run 0 config "$configs/good.yaml"
stdout_has "run:" "model:" "train:" "data:" "parallel:" "device:" "checkpoint:"
stdout_has "  n_layer: 3 " "  attention: linear " "  preset: github " "  memory_gb: 8.0 "
# The printed config is itself a config that resolves to the same thing.
cp "$tmp/out" "$tmp/resolved.yaml"
run 0 config "$tmp/resolved.yaml"
cmp -s "$tmp/out" "$tmp/resolved.yaml" || fail "the resolved config does not resolve to itself"

run 2 config "$configs/missing.yaml"
stderr_line "trident: config error:" "missing.yaml" "not found"
run 2 config "$configs/unknown_key.yaml"
stderr_line "trident: config error:" "unknown_key.yaml:2:3:" "model.n_layers" "did you mean 'model.n_layer'"
run 2 config "$configs/wrong_type.yaml"
stderr_line "trident: config error:" "wrong_type.yaml:3:12:" "model.n_layer" "expected an integer, got 'three'"
run 2 config "$configs/syntax_error.yaml"
stderr_line "trident: config error:" "syntax_error.yaml:3:" "YAML syntax error"

run 2 config "$configs/good.yaml" --set model.n_layer=0
stderr_line "trident: config error:" "--set model.n_layer=0" "model.n_layer" "allowed: 1 to 1024"
run 2 config "$configs/good.yaml" --set model.n_layerz=2
stderr_line "trident: config error:" "--set model.n_layerz=2" "did you mean 'model.n_layer'"
# A control character in a path or a name (a NUL would cut it short: the run would write elsewhere than written) is
# refused, from a file or from --set; free text (data.separator, sample.prompt) may hold them.
printf 'run:\n  dir: "runs/a\\0b"\n' >"$tmp/nul.yaml"
run 2 config "$tmp/nul.yaml"
stderr_line "trident: config error:" "nul.yaml" "run.dir" "control character (byte 0x00 at offset 6)"
run 2 config "$configs/good.yaml" --set run.name=$'tiny\x01'
stderr_line "trident: config error:" "run.name" "control character (byte 0x01"
run 0 config "$configs/good.yaml" --set 'data.separator="\n%\n"'
run 0 config "$configs/good.yaml" --set model.n_layer=2 --set train.steps=30
stdout_has "  n_layer: 2 " "  steps: 30 "

# bench kernels: the default backend (cpu) runs; an unknown backend is a usage error; cuda without a CUDA build or
# without a usable device is a one-line runtime error from kernels/backends.h. That last check is skipped where
# `nvidia-smi -L` lists a GPU: there the bench would run instead.
run 0 bench --repeat 0.05 kernels
stdout_has "## CPU kernels" "layernorm fwd" "check_err"
run 2 bench kernels --backend nope
stderr_line "trident: usage error:" "--backend"
if nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "skip: trident bench kernels --backend cuda (nvidia-smi lists a GPU, so the bench would run)"
else
  run 1 bench kernels --backend cuda
  stderr_line "trident: error: bench kernels --backend cuda:"
fi

# bench gemm --blas: one library measured (tests/kernels/test_blas.cpp checks that all of them load here); an unknown
# one is a usage error, and a config naming one a config error.
run 0 bench --repeat 0.01 --blas blis gemm
stdout_has "auto picks " "| blis " "roof (best)" "blis: BLIS"
run 2 bench --blas mkl gemm
stderr_line "trident: usage error:" "--blas"
run 2 config "$configs/good.yaml" --set device.blas=mkl
stderr_line "trident: config error:" "device.blas" "openblas-debian"

# bench step CONFIG: the config's model on its device.memory_gb (a budget the step does not fit is the allocator's
# error naming the key)
run 0 bench --repeat 0.01 step "$configs/tiny_train.yaml"
stdout_has "| tiny " "tokens/s"
run 1 bench --repeat 0.01 step "$configs/tiny_train.yaml" --set device.memory_gb=0.0001
last_stderr_line "trident: error:" "memory budget exceeded" "device.memory_gb"

# bench sp: a 1-rank world runs the T = 1 kernels only; a bad --lengths value is a usage error
run 0 bench sp --lengths 256 --repeat 0.01
stdout_has "sequence-parallel attention" "| kernel " "linear" "softmax"
run 2 bench sp --lengths 256,abc
stderr_line "trident: usage error:" "--lengths"

# like: the rates printed match the table's ratios (the arithmetic is tests/parallel/cost/test_testbed_scale.cpp);
# a profile without a model section, or a missing file, is a config error naming the file
clusters=$(dirname "$0")/../../configs/clusters
run 0 like "$clusters/a100-8x8-gpt7b.yaml" "$clusters/a100-80g-16x8-tnl1b.yaml" --slowdown 2 --ranks-per-node 4
stdout_has "| testbed | GPT-7B" "| here    | TNL-1B" "emucluster: --intra-bw " "(a node's link: 4 ranks x "
run 0 like "$clusters/a100-8x8-gpt7b.yaml" "$clusters/a100-80g-16x8-tnl1b.yaml" --json
"$python" - "$tmp/out" <<'PY' ||
import json, sys
o = json.load(open(sys.argv[1]))
for link in ("intra_ratio", "inter_ratio"):
    assert abs(o["here"][link] / o["testbed"][link] - 1) < 1e-9, o
assert o["intra_bw"].endswith("kbit") and o["inter_bw"].endswith("kbit"), o
PY
  fail "like --json: the ratios differ or a rate is not in tc notation"
printf 'compute: {alpha1_s_per_token2: 0, alpha2_s_per_token: 1.0e-3, beta1_s: 0}\n' >"$tmp/no_model.yaml"
run 2 like "$clusters/a100-8x8-gpt7b.yaml" "$tmp/no_model.yaml"
stderr_line "trident: config error:" "no_model.yaml" "'model'"
run 2 like "$clusters/a100-8x8-gpt7b.yaml" "$tmp/missing.yaml"
stderr_line "trident: config error:" "missing.yaml"
run 2 like "$clusters/a100-8x8-gpt7b.yaml" "$clusters/a100-80g-16x8-tnl1b.yaml" --slowdown 0.5
stderr_line "trident: usage error:" "--slowdown"
# --exchange pipeline: ATOM's testbed (8 peers, GPT-3 6.7B) against itself on 2 stages: the stage computes 4x more
# a token, so the link may be 4x slower for the same ratio, and a round of parameters weighs 4x more tokens
run 0 like "$clusters/rtx4090-8x1-gpt6.7b.yaml" "$clusters/rtx4090-8x1-gpt6.7b.yaml" --exchange pipeline --stages 2 \
  --json
"$python" - "$tmp/out" <<'PY' ||
import json, sys
o = json.load(open(sys.argv[1]))
tb, here = o["testbed"], o["here"]
assert o["exchange"] == "pipeline" and tb["stages"] == 8 and here["stages"] == 2, o
assert abs(here["inter_ratio"] / tb["inter_ratio"] - 1) < 1e-9, o
assert abs(tb["inter_bytes_per_s"] / here["inter_bytes_per_s"] - 4) < 1e-9, o
assert abs(here["round_tokens"] / tb["round_tokens"] - 4) < 1e-9, o
PY
  fail "like --exchange pipeline: the stages do not scale the link and the round as computed"
run 2 like "$clusters/rtx4090-8x1-gpt6.7b.yaml" "$clusters/rtx4090-8x1-gpt6.7b.yaml" --exchange pipeline --stages 1
stderr_line "trident: usage error:" "--stages"
run 2 like "$clusters/rtx4090-8x1-gpt6.7b.yaml" "$clusters/rtx4090-8x1-gpt6.7b.yaml" --exchange pipeline
stderr_line "trident: config error:" "at least 2 stages"
run 2 like "$clusters/rtx4090-8x1-gpt6.7b.yaml" "$clusters/rtx4090-8x1-gpt6.7b.yaml" --exchange ring
stderr_line "trident: usage error:" "--exchange"
# --alltoall-group: FlexSP's testbed against itself, the inter link its all-to-all over 64 GPUs (4.9 GB/s, not
# inter_node's 10.3): the testbed's inter ratio grows by 10.3 / 4.9 and here's inter link follows it
run 0 like "$clusters/a100-8x8-gpt7b.yaml" "$clusters/a100-8x8-gpt7b.yaml" --alltoall-group 64 --json
"$python" - "$tmp/out" <<'PY' ||
import json, sys
o = json.load(open(sys.argv[1]))
tb, here = o["testbed"], o["here"]
assert o["alltoall_group"] == 64 and abs(tb["inter_bytes_per_s"] - 4.9e9) < 1, o
assert abs(here["inter_bytes_per_s"] - 4.9e9) < 1 and abs(here["intra_bytes_per_s"] - 119.5e9) < 1, o
PY
  fail "like --alltoall-group 64: the inter link is not the 64-GPU all-to-all's"
run 0 like "$clusters/a100-8x8-gpt7b.yaml" "$clusters/a100-8x8-gpt7b.yaml" --alltoall-group 64
grep -q "all-to-all over 64 devices" "$tmp/out" || fail "like --alltoall-group: the table does not say which link"
run 2 like "$clusters/a100-8x8-gpt7b.yaml" "$clusters/a100-8x8-gpt7b.yaml" --alltoall-group 12
stderr_line "trident: config error:" "a100-8x8-gpt7b.yaml" "no row of group_size 12" "2, 4, 8, 16, 32, 64"
run 2 like "$clusters/rtx4090-8x1-gpt6.7b.yaml" "$clusters/rtx4090-8x1-gpt6.7b.yaml" --exchange pipeline --stages 2 \
  --alltoall-group 8
stderr_line "trident: config error:" "not an all-to-all"
run 2 like "$clusters/a100-8x8-gpt7b.yaml" "$clusters/a100-8x8-gpt7b.yaml" --alltoall-group 1
stderr_line "trident: usage error:" "--alltoall-group"
# --scale-lengths: a profile like GPT-7B's with twice its alpha2 has twice its L0 = alpha2 / alpha1, so lengths scale
# by 2 and here is taken at twice the testbed's 393,216 tokens
printf 'compute: {alpha1_s_per_token2: 5.128e-09, alpha2_s_per_token: 0.00036792, beta1_s: 0}\n%s\n' \
  "model: {name: twice, n_layer: 32, n_embd: 4096, bytes_per_value: 2, max_seq_len: 4096}" >"$tmp/twice.yaml"
run 0 like "$clusters/a100-8x8-gpt7b.yaml" "$tmp/twice.yaml" --scale-lengths --json
"$python" - "$tmp/out" <<'PY' ||
import json, sys
o = json.load(open(sys.argv[1]))
assert abs(o["length_scale"] - 2) < 1e-9 and o["here"]["max_seq_len"] == 2 * 393216, o
assert abs(o["here"]["inter_ratio"] / o["testbed"]["inter_ratio"] - 1) < 1e-9, o
PY
  fail "like --scale-lengths: the length scale or here's length is not as computed"
run 2 like "$clusters/rtx4090-8x1-gpt6.7b.yaml" "$clusters/rtx4090-8x1-gpt6.7b.yaml" --exchange pipeline --stages 2 \
  --scale-lengths
stderr_line "trident: config error:" "whatever its sequence's length"

echo "all $checks checks passed"
