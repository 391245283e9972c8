#!/usr/bin/env bash
# The CPU backend against PyTorch (Debian's python3-torch) on this machine, side by side in one run: GPT-2 small
# (124M, B=4, T=64) and a small shape (4 layers, width 256, vocab 8192, 4 x 256), fp32, forward + backward + AdamW.
# Rounds are interleaved (every variant once per round), and each variant's median and minimum over the rounds are
# reported. Variants: Trident on each BLAS library (device.blas) with its GEMMs in tiles on OpenMP's threads
# (device.gemm_threads: tiles, the default) and passive OpenMP waits (the default); on the library device.blas: auto
# picks, also one call a GEMM on the library's own threads (gemm_threads: library) and spinning waits
# (OMP_WAIT_POLICY=active); and PyTorch (its GEMMs on Debian's OpenMP OpenBLAS, kernels made for the processor:
# below). Then those on auto's library and PyTorch with one competing busy process on
# the machine, as the slowdown against the quiet run. Also the sgemm roof of each library (`trident bench gemm`,
# tiles and the library's own threads), and the bound no implementation passes: each step's model FLOPs at the best
# roof, as if the whole step were GEMMs at that rate (PyTorch's time over it is the most any step could beat PyTorch
# by here). Writes OUT/cpu.md.
#   bash scripts/bench/cpu.sh [--rounds N] [--threads N] [--out DIR] [--quick]
# --quick: GPT-2 small only, 2 rounds. TRIDENT names the binary (default build/trident).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source scripts/bench/lib.sh

die() { echo "bench/cpu.sh: $*" >&2; exit 2; }
rounds="" threads=$(nproc) out=runs/bench_cpu quick=0
bench_options rounds:count threads:count out:words quick:flag -- "$@"
: "${rounds:=$((quick ? 2 : 3))}"
/usr/bin/python3 -c "import torch" 2>/dev/null || die "PyTorch is missing (scripts/install-deps.sh installs it)"
trident=$(bench_trident)
out=$(bench_out "$out")
export OMP_NUM_THREADS=$threads
unset OMP_WAIT_POLICY

# name|layers|width|heads|vocab|batch|seq
shapes=("gpt2-124m|12|768|12|50304|4|64")
((quick)) || shapes+=("small-4x256|4|256|8|8192|4|256")

config_for() {  # shape -> a config file for `trident bench step`
  local name layers width heads vocab batch seq
  IFS='|' read -r name layers width heads vocab batch seq <<<"$1"
  local file=$out/$name.yaml
  printf 'run: {name: %s}\nmodel: {n_layer: %s, n_embd: %s, n_head: %s, vocab_size: %s, max_seq_len: %s}\n' \
    "$name" "$layers" "$width" "$heads" "$vocab" "$seq" >"$file"
  printf 'train: {batch_tokens: %s}\n' "$((batch * seq))" >>"$file"
  echo "$file"
}

# One measurement: ms/step of a variant on a shape, appended to OUT/samples.tsv as "load shape variant ms".
measure() {
  local load=$1 shape=$2 variant=$3 ms name layers width heads vocab batch seq
  IFS='|' read -r name layers width heads vocab batch seq <<<"$shape"
  case $variant in
    pytorch)
      ms=$(env "${torch_env[@]}" /usr/bin/python3 scripts/bench/torch_step.py --layers "$layers" --width "$width" \
             --heads "$heads" --vocab "$vocab" --batch "$batch" --seq "$seq" --steps 5 --warmup 2 |
           /usr/bin/python3 -c "import json, sys; print(json.load(sys.stdin)['ms_median'])") ;;
    *)
      local lib wait gemm
      IFS=/ read -r lib wait gemm <<<"$variant"
      # ms/step, and the step's model GFLOP (GFLOP/s x seconds, the same for every variant) for the bound in cpu.md
      local measured gflop
      measured=$(OMP_WAIT_POLICY=$wait "$trident" bench step "$(config_for "$shape")" --blas "$lib" --json --repeat 2 \
                   --set device.gemm_threads="$gemm" 2>/dev/null | grep '^{' |
                 /usr/bin/python3 -c "import json, sys; r = json.loads(sys.stdin.readline())
print(r['ms/step'], r['GFLOP/s'] * r['ms/step'] / 1e3)")
      read -r ms gflop <<<"$measured"
      printf '%s\t%s\n' "$name" "$gflop" >>"$out/gflop.tsv" ;;
  esac
  printf '%s\t%s\t%s\t%s\n' "$load" "$name" "$variant" "$ms" >>"$out/samples.tsv"
  printf '  %-6s %-12s %-26s %9.1f ms\n' "$load" "$name" "$variant" "$ms"
}

# `trident bench gemm` names the libraries that load and pass their check here, the kernel set of each, and the one
# device.blas: auto picks (in its title): lines "auto LIB" and "LIB KERNELS".
gemm_libraries() {
  "$trident" bench gemm --json --repeat 0.01 "$@" 2>/dev/null | /usr/bin/python3 -c "import json, re, sys
rows = [json.loads(line) for line in sys.stdin if line.startswith('{')]
print('auto', re.search(r'auto picks (\S+)', rows[0]['bench']).group(1))
for lib in dict.fromkeys(r['blas'] for r in rows):
    print(lib, next(r['kernels'] for r in rows if r['blas'] == lib))"
}
found=$(gemm_libraries) || die "trident bench gemm did not say which libraries load and which one auto picks"
auto_lib=$(awk '$1 == "auto" {print $2}' <<<"$found")
mapfile -t libraries < <(awk '$1 != "auto" {print $1}' <<<"$found")
kernels_of() { awk -v lib="$1" '$1 == lib {print $2}' <<<"$found"; }
# PyTorch's GEMMs run on Debian's OpenBLAS 0.3.21, and on its pthreads build as installed: that build's thread pool
# spins beside PyTorch's OpenMP threads and takes the cores they need (GPT-2 small on the Emerald Rapids: 4.3 s a
# step against 2.3 s). PyTorch runs here on the OpenMP build instead, the one Trident links (Debian's libblas.so.3
# alternative, chosen for PyTorch alone with LD_LIBRARY_PATH). Where that release does not know the processor it
# falls back to its generic Prescott kernels, and the comparison would measure that library more than the step:
# PyTorch then also gets OPENBLAS_CORETYPE naming the kernel set the current OpenBLAS picks here, once Trident has
# checked that 0.3.21's kernels of that name compute correct products on this processor. A preset OPENBLAS_CORETYPE
# is kept.
torch_env=() torch_blas="pthreads build" torch_kernels=$(kernels_of openblas-debian) native=$(kernels_of openblas)
openmp_blas=/usr/lib/$(gcc -dumpmachine)/openblas-openmp
if [[ -e $openmp_blas/libblas.so.3 ]]; then
  torch_env+=("LD_LIBRARY_PATH=$openmp_blas${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}") torch_blas="OpenMP build"
fi
if [[ -z ${OPENBLAS_CORETYPE:-} && $torch_kernels == Prescott && -n $native ]] &&
   [[ $(OPENBLAS_CORETYPE=$native gemm_libraries --blas openblas-debian) == *"openblas-debian $native"* ]]; then
  torch_env+=("OPENBLAS_CORETYPE=$native") torch_kernels=$native
fi
torch_how="Debian's OpenBLAS 0.3.21, $torch_blas, $torch_kernels kernels${torch_env[*]:+ (${torch_env[*]})}"
echo "bench/cpu.sh: PyTorch's GEMMs: $torch_how"

variants=()
for lib in "${libraries[@]}"; do variants+=("$lib/passive/tiles"); done
busy_variants=("$auto_lib/passive/tiles" "$auto_lib/passive/library" "$auto_lib/active/tiles" pytorch)
variants+=("${busy_variants[@]:1}")
echo "bench/cpu.sh: $threads threads, $rounds rounds, libraries: ${libraries[*]} (auto picks $auto_lib)"
for ((round = 1; round <= rounds; round++)); do
  echo "round $round (quiet)"
  for shape in "${shapes[@]}"; do for v in "${variants[@]}"; do measure quiet "$shape" "$v"; done; done
done
# One competing busy process for the contention rounds (GPT-2 small, the library device.blas: auto picks here).
sh -c 'while :; do :; done' &
busy=$!
trap 'kill $busy 2>/dev/null || true' EXIT
for ((round = 1; round <= rounds; round++)); do
  echo "round $round (one busy process)"
  for v in "${busy_variants[@]}"; do measure busy "${shapes[0]}" "$v"; done
done
kill $busy 2>/dev/null || true

"$trident" bench gemm --json --repeat 1 2>/dev/null | grep '^{' >"$out/gemm.jsonl"
/usr/bin/python3 - "$out" "$threads" "$rounds" "$torch_how" <<'EOF'
import collections, json, statistics, sys
out, threads, rounds, torch_how = sys.argv[1:5]
samples = collections.defaultdict(list)
for line in open(f"{out}/samples.tsv"):
    load, shape, variant, ms = line.split("\t")
    samples[(load, shape, variant)].append(float(ms))
tokens = {"gpt2-124m": 256, "small-4x256": 1024}
def label(variant):  # "lib/wait/gemm" -> "lib, wait waits, GEMMs in tiles | on the library's threads"
    if "/" not in variant:
        return variant
    lib, wait, gemm = variant.split("/")
    return f"{lib}, {wait} waits, " + ("GEMMs in tiles" if gemm == "tiles" else "GEMMs on the library's threads")
lines = [f"# CPU step: Trident vs PyTorch ({threads} threads, {rounds} interleaved rounds; median / min ms per step)", "",
         f"PyTorch's GEMMs: {torch_how}", ""]
lines += ["| shape | variant | ms/step (median) | min | tokens/s | vs PyTorch |", "|---|---|---|---|---|---|"]
for (load, shape, variant), ms in sorted(samples.items()):
    if load != "quiet":
        continue
    torch = statistics.median(samples[(load, shape, "pytorch")])
    med = statistics.median(ms)
    name = label(variant)
    lines.append(f"| {shape} | {name} | {med:.0f} | {min(ms):.0f} | {tokens[shape] / med * 1e3:.0f} | {torch / med:.2f}x |")
lines += ["", "With one competing busy process (GPT-2 small): slowdown against the quiet run", "",
          "| variant | quiet ms | busy ms | slowdown |", "|---|---|---|---|"]
for (load, shape, variant), ms in sorted(samples.items()):
    if load == "busy":
        quiet = statistics.median(samples[("quiet", shape, variant)])
        busy = statistics.median(ms)
        name = label(variant)
        lines.append(f"| {name} | {quiet:.0f} | {busy:.0f} | {busy / quiet:.2f}x |")
lines += ["", "sgemm roof per library (`trident bench gemm`, GFLOP/s)", "",
          "| library | kernels | tiles | library's threads |", "|---|---|---|---|"]
roofs = [row for row in map(json.loads, open(f"{out}/gemm.jsonl")) if row.get("shape") == "roof (best)"]
for row in roofs:
    lines.append(f"| {row['blas']} | {row['kernels']} | {row['GFLOP/s']:.0f} | {row['library threads GFLOP/s']:.0f} |")
# The bound no implementation passes here: the step's model FLOPs at the best roof of any library, all GEMM, nothing
# else. PyTorch's median over it is the most any CPU step could beat PyTorch by on this machine.
roof, roof_blas = max((max(r["GFLOP/s"], r["library threads GFLOP/s"]), r["blas"]) for r in roofs)
gflop = {shape: float(g) for shape, g in (line.split() for line in open(f"{out}/gflop.tsv"))}
lines += ["", f"The bound: each step's model FLOPs at the best roof above ({roof:.0f} GFLOP/s, {roof_blas}), as if "
          "the whole step were GEMMs at that rate", "",
          "| shape | GFLOP a step | bound ms | PyTorch / bound (the most any step could beat PyTorch by) | "
          "the fastest Trident variant's MFU (bound / its time) |", "|---|---|---|---|---|"]
for shape, g in sorted(gflop.items()):
    bound = g / roof * 1e3
    torch = statistics.median(samples[("quiet", shape, "pytorch")])
    best = min(statistics.median(ms) for (load, s, v), ms in samples.items()
               if load == "quiet" and s == shape and v != "pytorch")
    lines.append(f"| {shape} | {g:.1f} | {bound:.0f} | {torch / bound:.2f}x | {bound / best:.2f} |")
open(f"{out}/cpu.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
bench_stamp "$out/cpu.md"
