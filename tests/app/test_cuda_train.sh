#!/usr/bin/env bash
# `trident train` on the CUDA backend against the CPU backend, end to end (label gpu): one rank and two ranks
# (gradients over NCCL, or staged through the host where the node has one GPU) give the CPU's losses in fp32, and so
# do LASP, Ulysses and Ring Attention at sp = 2, a hybrid's LASP beside Ring, and FlexSP on 2 ranks; bf16 (also with sequence parallelism) follows
# the fp32 curve; MFU is written; ATOM swaps sub-models on the GPU; a resumed run continues bit for bit; a
# device.memory_gb the GPU cannot hold is a start-up error.
# Without a usable CUDA device (or a build without CUDA) it reports skipped (exit 77).
# Usage: TRIDENT=/path/to/trident bash tests/app/test_cuda_train.sh tests/app/configs
set -u
configs=${1:?usage: TRIDENT=/path/to/trident bash test_cuda_train.sh CONFIG_DIR}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
mpirun_env
tiny="$configs/tiny_train.yaml"
base=(--set train.steps=20 --set train.eval_every=0)

"$trident" train "$tiny" "${base[@]}" --set device.backend=cuda --set run.dir="$tmp/probe" \
  >"$tmp/out" 2>"$tmp/err"
probe=$?
if ((probe == 2)) && grep -q "device.backend: 'cuda' is not available" "$tmp/err"; then
  echo "skipped: $(tail -n 1 "$tmp/err")"
  exit 77
fi
((probe == 0)) || fail "the CUDA probe run failed with exit $probe"
# NCCL takes one rank a GPU: where this node has fewer than two, the 2-rank runs share the one GPU and exchange
# device buffers staged through host memory over MPI (device.comm: host) instead.
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
two_ranks=()
((gpus >= 2)) || two_ranks=(--set device.comm=host)
echo "2-rank runs: ${two_ranks[*]:-device.comm: nccl} ($gpus GPU(s) on this node)"
mpi2() { mpi 2 "$@" "${two_ranks[@]}"; }

# A device.memory_gb the GPU cannot hold beside what the CUDA libraries took is a configuration error at start-up,
# naming the key and the largest value that fits, before anything is written; with two ranks sharing the one GPU,
# each needs its budget.
mpi 1 2 train "$tiny" "${base[@]}" --set device.backend=cuda --set device.memory_gb=100000 --set run.dir="$tmp/huge"
grep -q "device.memory_gb = 100000 does not fit GPU 0" "$tmp/err" || fail "no start-up error naming device.memory_gb"
grep -q "set device.memory_gb to at most" "$tmp/err" || fail "the error does not say what fits"
[[ ! -e "$tmp/huge" ]] || fail "a run that could not start left run.dir behind"
if ((gpus < 2)); then
  free_mib=$(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits -i 0)
  mpi2 2 train "$tiny" "${base[@]}" --set device.backend=cuda --set run.dir="$tmp/shared" \
    --set device.memory_gb="$("$python" -c "print(round($free_mib * 0.7 / 1024, 2))")"
  grep -q "each of the 2 rank(s) on it" "$tmp/err" || fail "the shared GPU's budget error does not count its ranks"
fi

mpi 1 0 train "$tiny" "${base[@]}" --set run.dir="$tmp/cpu"
mpi 1 0 train "$tiny" "${base[@]}" --set device.backend=cuda --set run.dir="$tmp/cuda1"
close "$tmp/cpu" "$tmp/cuda1" 1e-4
mpi2 0 train "$tiny" "${base[@]}" --set device.backend=cuda --set run.dir="$tmp/cuda2"
close "$tmp/cpu" "$tmp/cuda2" 1e-4
mpi 1 0 train "$tiny" "${base[@]}" --set device.backend=cuda --set train.precision=bf16 --set run.dir="$tmp/bf16"
close "$tmp/cpu" "$tmp/bf16" 2e-3
"$python" - "$tmp/cuda1/metrics.jsonl" "$tmp/bf16/metrics.jsonl" <<'PY' || fail "MFU missing on cuda"
import json, sys
for path in sys.argv[1:]:
    assert all(0 < json.loads(l)["mfu"] < 1 for l in open(path)), path
PY

# LASP (sp = 2) on the GPU: the 1-rank CPU losses of the linear-attention model.
linear=(--set model.attention=linear)
mpi 1 0 train "$tiny" "${base[@]}" "${linear[@]}" --set run.dir="$tmp/cpu_linear"
mpi2 0 train "$tiny" "${base[@]}" "${linear[@]}" --set device.backend=cuda --set parallel.strategy=lasp \
  --set parallel.sp.size=2 --set run.dir="$tmp/lasp"
close "$tmp/cpu_linear" "$tmp/lasp" 1e-4
# Ulysses (sp = 2, all-to-alls over NCCL) on the GPU: the 1-rank CPU losses of the softmax model; in bf16, LASP and
# Ulysses follow the fp32 curve as bf16 data parallelism does.
mpi2 0 train "$tiny" "${base[@]}" --set device.backend=cuda --set parallel.strategy=lasp \
  --set parallel.sp.method=ulysses --set parallel.sp.size=2 --set run.dir="$tmp/ulysses"
close "$tmp/cpu" "$tmp/ulysses" 1e-4
mpi2 0 train "$tiny" "${base[@]}" --set device.backend=cuda --set parallel.strategy=lasp \
  --set parallel.sp.method=ulysses --set parallel.sp.size=2 --set train.precision=bf16 --set run.dir="$tmp/ulysses_bf16"
close "$tmp/cpu" "$tmp/ulysses_bf16" 2e-3
mpi2 0 train "$tiny" "${base[@]}" "${linear[@]}" --set device.backend=cuda --set parallel.strategy=lasp \
  --set parallel.sp.size=2 --set train.precision=bf16 --set run.dir="$tmp/lasp_bf16"
close "$tmp/cpu_linear" "$tmp/lasp_bf16" 2e-3
# Ring Attention (sp = 2, K/V blocks and dK/dV accumulators over NCCL, the CUDA block kernels) on the GPU: the same
# softmax losses in fp32, the fp32 curve in bf16.
mpi2 0 train "$tiny" "${base[@]}" --set device.backend=cuda --set parallel.strategy=lasp \
  --set parallel.sp.method=ring --set parallel.sp.size=2 --set run.dir="$tmp/ring"
close "$tmp/cpu" "$tmp/ring" 1e-4
grep -q "ring sp=2: 1 replica(s) x sequence-parallel groups of 2 ranks" "$tmp/ring/trident.log" || fail "the log does not name Ring"
mpi2 0 train "$tiny" "${base[@]}" --set device.backend=cuda --set parallel.strategy=lasp \
  --set parallel.sp.method=ring --set parallel.sp.size=2 --set train.precision=bf16 --set run.dir="$tmp/ring_bf16"
close "$tmp/cpu" "$tmp/ring_bf16" 2e-3
# A hybrid (model.layers: LS) at sp = 2 on the GPU: LASP in the linear layer beside Ring Attention (fp32) or
# Ulysses (bf16) in the softmax layer, against the 1-rank CPU losses of the same model.
hybrid=(--set model.attention=hybrid --set model.layers=LS)
mpi 1 0 train "$tiny" "${base[@]}" "${hybrid[@]}" --set run.dir="$tmp/cpu_hybrid"
mpi2 0 train "$tiny" "${base[@]}" "${hybrid[@]}" --set device.backend=cuda --set parallel.strategy=sp \
  --set parallel.sp.softmax_method=ring --set parallel.sp.size=2 --set run.dir="$tmp/hybrid_ring"
close "$tmp/cpu_hybrid" "$tmp/hybrid_ring" 1e-4
mpi2 0 train "$tiny" "${base[@]}" "${hybrid[@]}" --set device.backend=cuda --set parallel.strategy=sp \
  --set parallel.sp.size=2 --set train.precision=bf16 --set run.dir="$tmp/hybrid_bf16"
close "$tmp/cpu_hybrid" "$tmp/hybrid_bf16" 2e-3
# FlexSP (2 ranks, Ulysses inside its groups, the profile measured at start-up on the GPU): the softmax losses.
mpi2 0 train "$tiny" "${base[@]}" --set device.backend=cuda --set parallel.strategy=flexsp \
  --set parallel.flexsp.inner=ulysses --set run.dir="$tmp/flexsp"
close "$tmp/cpu" "$tmp/flexsp" 1e-4

# ATOM on the GPU: a model whose weights, gradients and AdamW state are several times device.memory_gb trains
# swapped (the store pinned on the host, sub-models copied on a stream of their own beside the compute) with the
# losses of the same model resident on the GPU; AdamW runs on the host there, so within 1e-5, not bit for bit.
atom_model=(--set model.n_layer=8 --set model.n_embd=192 --set train.batch_tokens=256 --set train.steps=6
            --set train.eval_every=3 --set device.backend=cuda)
mpi 1 0 train "$tiny" "${atom_model[@]}" --set parallel.strategy=dp --set run.dir="$tmp/atom_resident"
mpi 1 0 train "$tiny" "${atom_model[@]}" --set parallel.strategy=atom --set device.memory_gb=0.02 \
  --set run.dir="$tmp/atom_swapped"
close "$tmp/atom_resident" "$tmp/atom_swapped" 1e-5
"$python" - "$tmp/atom_swapped/metrics.jsonl" <<'PY' || fail "the swapped GPU run's metrics are wrong"
import json, sys
for r in map(json.loads, open(sys.argv[1])):
    assert r["strategy"] == "atom" and r["sub_models"] > 1 and r["peak_mem_bytes"] <= 0.02 * 2**30, r
    assert r["h2d_bytes"] > 0 and r["d2h_bytes"] > 0 and r["exposed_copy_ms"] >= 0, r
PY

# 20 steps straight vs 10 + resume for 10 on the GPU: bit-identical.
mpi 1 0 train "$tiny" "${base[@]}" --set device.backend=cuda --set checkpoint.every=10 --set run.dir="$tmp/straight"
mkdir -p "$tmp/resumed/checkpoints"
cp -r "$tmp/straight/checkpoints/step_00000010" "$tmp/resumed/checkpoints/"
mpi 1 0 train "$tiny" "${base[@]}" --set device.backend=cuda --set run.dir="$tmp/resumed"
"$python" - "$tmp/straight/metrics.jsonl" "$tmp/resumed/metrics.jsonl" <<'PY' || fail "resumed run diverged"
import json, sys
a, b = ([json.loads(l) for l in open(p)] for p in sys.argv[1:])
assert [r["loss"] for r in a if r["step"] >= 10] == [r["loss"] for r in b], "not bit-identical"
PY

echo "all $checks checks passed"
