#!/usr/bin/env bash
# The GPU check: every CUDA path of Trident on one GPU, in one call, from the kit scripts/gpu/pack.sh made.
#   bash .gpu/check.sh             # on the GPU machine: unpacks kit.tar.gz beside it into a temporary folder
# Writes $OUT/report.md (one row a stage: status, seconds, the line that says why) and $OUT/logs.tar.gz (every
# stage's log and JSON); OUT defaults to ./gpu-check. Each stage runs under its own timeout and the whole check under
# CHECK_BUDGET seconds (default 480): a stage that would overrun is reported "not run: budget", so one hang cannot
# eat the lease. Without a usable GPU the CPU stages run, the GPU stages report "no device", and it exits 0;
# otherwise it exits 1 when any stage failed.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${OUT:-$PWD/gpu-check}
budget=${CHECK_BUDGET:-480}
mkdir -p "$out" || { echo "check.sh: cannot create OUT '$out'" >&2; exit 2; }
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
logs="$work/logs"
mkdir -p "$logs"
# The kit's files: kit.tar.gz beside this script (pack.sh's output), unpacked for this run.
[[ -f $here/kit.tar.gz ]] ||
  { echo "check.sh: no kit.tar.gz beside $0: run it from the folder pack.sh made" >&2; exit 2; }
kit="$work/kit"
mkdir -p "$kit" && tar -xzf "$here/kit.tar.gz" -C "$kit" ||
  { echo "check.sh: cannot unpack $here/kit.tar.gz" >&2; exit 2; }
# shellcheck source=scripts/gpu/kit_env.sh
source "$kit/kit_env.sh" || { echo "check.sh: $kit is not a kit (no usable kit_env.sh)" >&2; exit 2; }
export KIT="$kit" WORK="$work" LOGS="$logs"
python=$(command -v python3 || true)
export PYTHON="$python"

# ---- the device ------------------------------------------------------------------------------------------------
gpu_why=""
if ! command -v nvidia-smi >/dev/null 2>&1; then
  gpu_why="nvidia-smi not found"
elif ! nvidia-smi -L >"$logs/nvidia-smi-L.txt" 2>&1 || ! grep -q '^GPU ' "$logs/nvidia-smi-L.txt"; then
  gpu_why="nvidia-smi lists no GPU: $(tail -n 1 "$logs/nvidia-smi-L.txt")"
fi

rows=()
failed=0
start_all=$SECONDS
# stage NAME cpu|gpu TIMEOUT COMMAND...: runs COMMAND (a function below, or a program) under `timeout`, its output in
# $LOGS/NAME.log; records pass, FAIL (exit n), timeout, skipped (exit 77), no device or not run: budget.
stage() {
  local name=$1 kind=$2 limit=$3 rc status why
  shift 3
  local log="$logs/$name.log" t0=$SECONDS left=$((budget - (SECONDS - start_all)))
  if [[ $kind == gpu && -n $gpu_why ]]; then
    status="no device"
    why=$gpu_why
  elif ((left < 15)); then
    status="not run: budget"
    why="$left s of CHECK_BUDGET=$budget s left"
  else
    ((limit > left - 5)) && limit=$((left - 5))
    echo "== $name (at most $limit s)"
    timeout --kill-after=10 "$limit" "$@" >"$log" 2>&1
    rc=$?
    case $rc in
      0) status=pass ;;
      77) status=skipped ;;
      124 | 137) status="timeout ($limit s)" ;;
      *) status="FAIL (exit $rc)" ;;
    esac
    # the last line that says something (not blank, not one of mpirun's rules of dashes)
    why=$(grep -v '^[[:space:]-]*$' "$log" | tail -n 1 | cut -c1-200 | tr '|' '/')
    [[ $status == pass || $status == skipped ]] || failed=$((failed + 1))
  fi
  rows+=("| $name | $kind | $status | $((SECONDS - t0)) | ${why:-} |")
  echo "   $status: ${why:-}"
}

# ---- stages: each a function, exported so that `timeout` can run it in a shell of its own ----------------------
export tiny="$kit/configs/tiny_train.yaml"

# Every library of every binary resolves, and from the kit or the system's base (glibc, the CUDA toolkit, NCCL).
libraries() {
  local bad=0 f
  for f in "$KIT"/bin/* "$KIT"/lib/openmpi3/*.so "$KIT"/lib/pmix/*.so; do
    [[ -f $f ]] || continue
    if ldd "$f" 2>&1 | grep -q 'not found'; then
      echo "$f:"; ldd "$f" | grep 'not found'; bad=1
    fi
  done
  ldd "$KIT/bin/trident"
  ((bad == 0)) && echo "every library of every kit binary resolves"
  return $bad
}
version() {
  "$KIT/bin/trident" --version && "$KIT/bin/trident" --version | grep -q cuda && echo "the build has cuda"
}
# The CPU backend trains (1 rank), and the kit's Open MPI starts 2 ranks that train data-parallel.
cpu_train() {
  "$KIT/bin/trident" train "$tiny" --set train.steps=5 --set run.dir="$WORK/cpu_train" &&
    [[ $(wc -l <"$WORK/cpu_train/metrics.jsonl") == 5 ]] && echo "5 steps on the cpu backend"
}
mpi_train() {
  mpirun -np 2 --bind-to none "$KIT/bin/trident" train "$tiny" --set train.steps=5 --set run.dir="$WORK/mpi_train" &&
    [[ $(wc -l <"$WORK/mpi_train/metrics.jsonl") == 5 ]] && echo "5 steps on 2 ranks (kit's mpirun)"
}
# The gpu tests: kernels and the whole model against the CPU backend (GPT-2 124M at its real shapes too), ATOM's
# swaps, NCCL (1 rank: it takes one rank a GPU), LASP and Ulysses/Ring on device buffers (1 and 2 ranks on the one
# GPU; Ulysses and Ring staged through the host at 2).
gpu_kernels() { "$KIT/bin/test_kernels_cuda" --use-colour no; }
gpu_atom() { "$KIT/bin/test_atom_cuda" --use-colour no; }
gpu_nccl() { mpirun -np 1 "$KIT/bin/test_nccl" --use-colour no; }
gpu_lasp() { for n in 1 2; do mpirun -np $n "$KIT/bin/test_lasp_cuda" --use-colour no || return; done; }
gpu_sp() { for n in 1 2; do mpirun -np $n "$KIT/bin/test_sp_cuda" --use-colour no || return; done; }
# Training on CUDA against the CPU backend, 1 and 2 ranks, DP, LASP, Ulysses, Ring, ATOM, bf16, resume.
cuda_train() { TRIDENT="$KIT/bin/trident" bash "$KIT/tests/test_cuda_train.sh" "$KIT/configs"; }
bench_kernels() { "$KIT/bin/trident" bench kernels --backend cuda; }
# GPT-2 124M (T = 1024, V = 50,304), 16 sequences a step: tokens/s and MFU against the datasheet peak.
bench_step() {  # bench_step fp32|bf16
  "$KIT/bin/trident" bench step "$KIT/configs/gpt2_124m.yaml" --set train.precision="$1" --json |
    tee "$LOGS/bench_step_$1.json"
}
torch_step() {  # torch_step eager|compile: the same model and batch in the machine's PyTorch
  local flags=()
  [[ $1 == compile ]] && flags=(--compile)
  "$PYTHON" "$KIT/scripts/torch_step.py" --device cuda --precision bf16 --batch 16 --seq 1024 --steps 10 \
    --warmup 3 "${flags[@]}" | tee "$LOGS/torch_$1.json"
}
# The quickstart model on its corpus, 100 steps on CUDA and on the CPU: the losses within 1e-4.
quickstart() {
  local args=(--set train.steps=100 --set train.eval_every=0 --set checkpoint.every=0 --set sample.tokens=0
              --set data.path="$KIT/data/fortunes.txt")
  "$KIT/bin/trident" train "$KIT/configs/quickstart.yaml" "${args[@]}" --set run.dir="$WORK/qs_cpu" &&
    "$KIT/bin/trident" train "$KIT/configs/quickstart.yaml" "${args[@]}" --set device.backend=cuda \
      --set run.dir="$WORK/qs_cuda" &&
    "$PYTHON" - "$WORK/qs_cpu/metrics.jsonl" "$WORK/qs_cuda/metrics.jsonl" <<'PY'
import json, sys
a, b = ([json.loads(l)["loss"] for l in open(p)] for p in sys.argv[1:])
assert len(a) == len(b) == 100, (len(a), len(b))
worst = max(abs(x - y) / abs(x) for x, y in zip(a, b))
print(f"100 quickstart steps: largest relative loss difference cuda vs cpu {worst:.2e} (bound 1e-4); "
      f"final loss cpu {a[-1]:.4f} cuda {b[-1]:.4f}")
sys.exit(0 if worst <= 1e-4 else 1)
PY
}
# Memory per rank on CUDA, 2 ranks sharing the GPU (device buffers staged through the host): the tiny model at
# parallel.zero.stage 0 and 1 and with train.recompute: full trains to the same losses bit for bit, at stages 2 and 3
# (gradients reduce-scattered as the backward runs, and at stage 3 each layer's weights gathered from the ranks'
# ranges: the same sums in another order) within 1e-5, and each run's peak_mem_bytes (rank 0's budget) and the
# device's use are reported.
memory() {
  local base=(--set train.steps=5 --set train.eval_every=0 --set device.backend=cuda --set device.comm=host
              --set parallel.strategy=dp) run
  for run in "stage0" "stage1 --set parallel.zero.stage=1" "stage2 --set parallel.zero.stage=2" \
             "stage3 --set parallel.zero.stage=3" "recompute --set train.recompute=full"; do
    read -ra sets <<<"$run"
    mpirun -np 2 --bind-to none "$KIT/bin/trident" train "$tiny" "${base[@]}" "${sets[@]:1}" \
      --set run.dir="$WORK/memory_${sets[0]}" || return
    grep -h "device .* holds" "$WORK/memory_${sets[0]}/trident.log" | head -n 1
  done
  "$PYTHON" - "$WORK"/memory_{stage0,stage1,stage2,stage3,recompute} <<'PY'
import json, sys
runs = {d.rsplit("_", 1)[1]: [json.loads(l) for l in open(d + "/metrics.jsonl")] for d in sys.argv[1:]}
for name, rows in runs.items():
    print(f"{name}: peak_mem_bytes {max(r['peak_mem_bytes'] for r in rows) / 2**20:.2f} MiB a rank")
losses = {name: [r["loss"] for r in rows] for name, rows in runs.items()}
close = all(abs(a - b) <= 1e-5 * abs(a) for stage in ("stage2", "stage3")
            for a, b in zip(losses["stage0"], losses[stage]))
print(f"stages 2 and 3's losses within 1e-5 of stage 0's: {close}")
sys.exit(0 if losses["stage1"] == losses["stage0"] == losses["recompute"] and close else 1)
PY
}
# compute-sanitizer's memcheck over one training step of the tiny model on CUDA.
sanitizer() {
  command -v compute-sanitizer >/dev/null || { echo "compute-sanitizer not found"; return 77; }
  compute-sanitizer --tool memcheck --error-exitcode 9 "$KIT/bin/trident" train "$tiny" --set train.steps=1 \
    --set train.eval_every=0 --set checkpoint.every=0 --set device.backend=cuda --set run.dir="$WORK/sanitizer"
}
export -f libraries version cpu_train mpi_train gpu_kernels gpu_atom gpu_nccl gpu_lasp gpu_sp cuda_train \
  bench_kernels bench_step torch_step quickstart memory sanitizer

echo "GPU check: kit $kit, report $out/report.md, budget $budget s"
stage device gpu 20 nvidia-smi
stage libraries cpu 20 bash -o pipefail -c libraries
stage version cpu 10 bash -o pipefail -c version
stage cpu_train cpu 60 bash -o pipefail -c cpu_train
stage mpi_train cpu 60 bash -o pipefail -c mpi_train
stage gpu_kernels gpu 150 bash -o pipefail -c gpu_kernels
stage bench_step_bf16 gpu 90 bash -o pipefail -c "bench_step bf16"
stage torch_eager gpu 90 bash -o pipefail -c "torch_step eager"
stage bench_step_fp32 gpu 60 bash -o pipefail -c "bench_step fp32"
stage quickstart gpu 120 bash -o pipefail -c quickstart
stage cuda_train gpu 150 bash -o pipefail -c cuda_train
stage gpu_atom gpu 60 bash -o pipefail -c gpu_atom
stage gpu_nccl gpu 40 bash -o pipefail -c gpu_nccl
stage gpu_lasp gpu 40 bash -o pipefail -c gpu_lasp
stage gpu_sp gpu 40 bash -o pipefail -c gpu_sp
stage memory gpu 75 bash -o pipefail -c memory
stage bench_kernels gpu 90 bash -o pipefail -c bench_kernels
stage sanitizer gpu 120 bash -o pipefail -c sanitizer
stage torch_compile gpu 150 bash -o pipefail -c "torch_step compile"

# ---- the report ------------------------------------------------------------------------------------------------
summary=""
if [[ -z $gpu_why && -n $python ]]; then
  summary=$("$python" - "$logs" <<'PY' 2>&1
import json, os, sys
logs = sys.argv[1]
def rows(name):
    path = os.path.join(logs, name)
    if not os.path.exists(path):
        return []
    return [json.loads(l) for l in open(path) if l.startswith("{")]
lines = []
for p in ("bf16", "fp32"):
    for r in rows(f"bench_step_{p}.json"):
        lines.append(f"- Trident GPT-2 124M step, {p}: {r['tokens/s']:,.0f} tokens/s, {r['ms/step']:.1f} ms/step, "
                     f"MFU {100 * r['MFU']:.1f}% of the datasheet peak")
torch_rows = {m: rows(f"torch_{m}.json") for m in ("eager", "compile")}
for mode, rs in torch_rows.items():
    for r in rs:
        lines.append(f"- PyTorch {r['torch']} {mode}, bf16 autocast: {r['tokens_per_s']:,.0f} tokens/s, "
                     f"{r['ms_median']:.1f} ms/step")
for name in ("quickstart.log", "cuda_train.log"):  # what the CUDA libraries took beside device.memory_gb
    path = os.path.join(logs, name)
    held = [l.split("] ", 2)[-1].strip() for l in open(path, errors="replace") if "cuda: device" in l] \
        if os.path.exists(path) else []
    if held:
        lines.append(f"- {name}: {held[-1]}")
ours = rows("bench_step_bf16.json")
for mode, rs in torch_rows.items():
    if ours and rs:
        lines.append(f"- Trident bf16 / PyTorch {mode}: {ours[0]['tokens/s'] / rs[0]['tokens_per_s']:.2f}x tokens/s")
print("\n".join(lines))
PY
)
fi
{
  echo "# GPU check"
  echo
  echo "- kit: $(cat "$kit/KIT_INFO" 2>/dev/null | tr '\n' ';' | sed 's/;$//')"
  echo "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
  echo "- host: $(uname -srm); CPU: $cpu, $(nproc) cores"
  if [[ -n $gpu_why ]]; then
    echo "- device: no device ($gpu_why)"
  else
    query=name,memory.total,driver_version,clocks.max.sm
    echo "- device: $(nvidia-smi --query-gpu=$query --format=csv,noheader 2>&1 | head -n 1)"
  fi
  echo "- budget: $budget s; used $((SECONDS - start_all)) s; $failed stage(s) failed"
  echo
  echo "| stage | kind | status | s | last line of its log |"
  echo "|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  if [[ -n $summary ]]; then
    echo
    echo "## Measured"
    echo "$summary"
  fi
} >"$out/report.md"
cp "$out/report.md" "$logs/"
tar -C "$work" -czf "$out/logs.tar.gz" logs
cat "$out/report.md"
if [[ -n $gpu_why ]]; then
  echo "no device: the GPU stages did not run ($gpu_why)"
  ((failed == 0)) || exit 1
  exit 0
fi
((failed == 0))
