#!/usr/bin/env bash
# device.comm: host end to end on the CPU backend, where the staging copies are memcpy: the path several ranks on one
# GPU take (parallel/comm/staged.h). Data parallelism, LASP-1/LASP-2, Ulysses, Ring and FlexSP on 2 ranks (and Ring
# on 4, at dp 2 x sp 2) give the losses of the same runs over MPI directly, bit for bit, and the single rank's within
# 1e-5; a bad value names the key.
# Usage: TRIDENT=/path/to/trident bash tests/app/test_staged_comm.sh tests/app/configs
set -u
configs=${1:?usage: TRIDENT=/path/to/trident bash test_staged_comm.sh CONFIG_DIR}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
mpirun_env
tiny="$configs/tiny_train.yaml"  # softmax, n_head 4
base=(--set train.eval_every=0 --set train.warmup_steps=2 --set train.steps=8)
host=(--set device.comm=host)

# same A B: two runs' losses are equal bit for bit.
same() {
  "$python" - "$1/metrics.jsonl" "$2/metrics.jsonl" <<'PY' || fail "losses of $1 and $2 are not bit-identical"
import json, sys
a, b = ([json.loads(l)["loss"] for l in open(p)] for p in sys.argv[1:])
assert len(a) == len(b) and a == b, (a, b)
PY
}

mpi 1 0 train "$tiny" "${base[@]}" --set run.dir="$tmp/single"
mpi 1 0 train "$tiny" "${base[@]}" --set model.attention=linear --set run.dir="$tmp/single_linear"
# name RANKS ARGS...: the run over MPI directly and staged; equal to each other bit for bit, to one rank within 1e-5.
both() {
  local name=$1 ranks=$2 reference=$tmp/single
  shift 2
  [[ " $* " == *" model.attention=linear "* ]] && reference=$tmp/single_linear
  [[ " $* " == *" model.max_seq_len=192 "* ]] && reference=$tmp/single_long
  mpi "$ranks" 0 train "$tiny" "${base[@]}" "$@" --set run.dir="$tmp/$name"
  mpi "$ranks" 0 train "$tiny" "${base[@]}" "$@" "${host[@]}" --set run.dir="$tmp/${name}_staged"
  same "$tmp/$name" "$tmp/${name}_staged"
  close "$reference" "$tmp/${name}_staged" 1e-5
}
both dp 2 --set parallel.strategy=dp
both lasp1 2 --set model.attention=linear --set parallel.strategy=sp --set parallel.sp.size=2
both lasp2 2 --set model.attention=linear --set parallel.strategy=sp --set parallel.sp.size=2 \
  --set parallel.lasp.variant=lasp2
both ulysses 2 --set parallel.strategy=sp --set parallel.sp.method=ulysses --set parallel.sp.size=2
both ring 2 --set parallel.strategy=sp --set parallel.sp.method=ring --set parallel.sp.size=2
both dp2ring2 4 --set parallel.strategy=sp --set parallel.sp.method=ring --set parallel.sp.size=2
# FlexSP: documents up to 192 tokens where a rank holds about 104 (device.memory_gb 0.003), so groups of 2 run
# Ulysses beside ranks alone; plans from a profile file, a pure function of the batch, so both runs plan alike.
cat >"$tmp/node2.yaml" <<'YAML'
cluster: {name: one node of two, nodes: 1, devices_per_node: 2, device_memory_gb: 1}
network:
  intra_node: {bandwidth_gb_per_s: 1.0, latency_us: 2000}
  inter_node: {bandwidth_gb_per_s: 1.0, latency_us: 2000}
compute: {alpha1_s_per_token2: 1.0e-9, alpha2_s_per_token: 2.0e-5, beta1_s: 0.0005}
YAML
long=(--set model.attention=linear --set model.max_seq_len=192 --set train.batch_tokens=256)
mpi 1 0 train "$tiny" "${base[@]}" "${long[@]}" --set run.dir="$tmp/single_long"
both flexsp 2 "${long[@]}" --set parallel.strategy=flexsp --set parallel.flexsp.inner=ulysses \
  --set device.memory_gb=0.003 --set parallel.select.profile="$tmp/node2.yaml"
grep -q '<[0-9, ]*2' "$tmp/flexsp_staged/metrics.jsonl" || fail "no FlexSP group of 2 ran staged"

run 2 train "$tiny" --set device.comm=shm --set run.dir="$tmp/bad"
stderr_line "trident: config error:" "device.comm" "shm" "nccl" "host"
echo "all $checks checks passed"
