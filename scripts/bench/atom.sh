#!/usr/bin/env bash
# ATOM's peers against the pipeline baseline and synchronous data parallelism over slow links: on the emulated
# cluster (2 nodes x 1 rank, one link between them rate-limited to each bandwidth in turn), the same model and global
# batch (configs/experiments/atom/atom_peers_cpu.yaml) trained by
#   atom      two peers, each a whole replica on its half of the batch, parameters averaged every
#             parallel.atom.average_every steps (default 4) in the background, applied within max_staleness (1)
#   pipeline  GPipe over the two ranks (one stage a node), the batch in train.micro_batches micro-batches
#   dp        synchronous data parallelism (a gradient all-reduce every step)
# and, at the slowest link, atom_diloco: ATOM with DiLoCo's outer Nesterov step (parallel.atom.averaging: diloco).
# Prints (and writes to runs/bench_atom/atom.md) a markdown table per bandwidth: median step time and tokens/s after
# the first step, ATOM's speedup over the others, the bytes a rank sent a step; and draws
# runs/bench_atom/throughput.png (tokens/s against bandwidth) and runs/bench_atom/loss.png (loss against tokens of
# ATOM's two averaging modes beside synchronous data parallelism at the slowest link). About 10 minutes on 2 cores;
# needs root.
# Usage: bash scripts/bench/atom.sh [--bandwidths "10gbit 1gbit 100mbit"] [--steps 16] [--average-every 4]
#                                   [--set key=value ...]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
die() { echo "bench/atom.sh: $*" >&2; exit 2; }
bandwidths="10gbit 1gbit 100mbit" steps=16 average_every=4 sets=()
source scripts/bench/lib.sh
bench_options bandwidths:words steps:count average-every:count set:sets -- "$@"
((steps >= 2)) || die "--steps: '$steps' is below 2 (the first step is not measured)"
read -r -a bandwidth_list <<<"$bandwidths"
((${#bandwidth_list[@]})) || die "--bandwidths: empty list"
for bw in "${bandwidth_list[@]}"; do
  bench_is_rate "$bw" || die "--bandwidths: '$bw' is not a rate like 100mbit or 1gbit"
done
trident=$(bench_trident) || exit 2
out=$(bench_out runs/bench_atom)
config=$(realpath configs/experiments/atom/atom_peers_cpu.yaml)

emu=(bash scripts/cluster/emucluster.sh)
cl=(--name "bench-atom-$$")
trap '"${emu[@]}" down "${cl[@]}" >/dev/null 2>&1' EXIT
export OMP_NUM_THREADS=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
slowest=$(/usr/bin/python3 -c '
import re, sys
mbit = lambda bw: float(re.match(r"[0-9.]+", bw).group()) * {"kbit": 1e-3, "mbit": 1, "gbit": 1e3}[bw[-4:]]
print(min(sys.argv[1:], key=mbit))' "${bandwidth_list[@]}")
train() {  # NAME ARGS...: a run on the cluster that is up; one that stops is reported, the others go on
  local name=$1
  shift
  echo "bench/atom.sh: $name" >&2
  timeout 1200 "${emu[@]}" run "${cl[@]}" -- "$trident" train "$config" --set train.steps="$steps" \
    --set parallel.atom.average_every="$average_every" --set run.dir="$out/$name" "$@" "${sets[@]}" \
    >"$out/$name.log" 2>&1 || echo "bench/atom.sh: $name stopped (see $out/$name.log)" >&2
}
for bw in "${bandwidth_list[@]}"; do
  "${emu[@]}" down "${cl[@]}" >/dev/null 2>&1 || true
  "${emu[@]}" up "${cl[@]}" --nodes 2 --ranks-per-node 1 --inter-bw "$bw" >/dev/null
  for strategy in atom pipeline dp; do train "${bw}_$strategy" --set parallel.strategy="$strategy"; done
  if [[ $bw == "$slowest" ]]; then
    train "${bw}_atom_diloco" --set parallel.strategy=atom --set parallel.atom.averaging=diloco
  fi
done

/usr/bin/python3 - "$out" "$steps" "$average_every" "$slowest" "${bandwidth_list[@]}" <<'PY' | tee "$out/atom.md"
import json, re, statistics, sys
from pathlib import Path
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
out, steps, average_every, slowest = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
bandwidths = sys.argv[5:]
strategies = ("atom", "pipeline", "dp")
def rows(name):
    p = out / name / "metrics.jsonl"
    return [json.loads(l) for l in open(p)] if p.exists() else []
def mbit(bw):
    value, unit = re.fullmatch(r"([0-9.]+)(kbit|mbit|gbit)", bw).groups()
    return float(value) * {"kbit": 1e-3, "mbit": 1.0, "gbit": 1e3}[unit]
print(f"# ATOM ({average_every}-step averaging) vs GPipe vs synchronous data parallelism, 2 nodes x 1 rank, "
      f"{steps} steps of configs/experiments/atom/atom_peers_cpu.yaml\n")
print("| link | strategy | step ms (median) | tokens/s | ATOM's speedup | MB sent a step (rank 0) |")
print("|---|---|---|---|---|---|")
throughput = {s: [] for s in strategies}
for bw in bandwidths:
    tps = {}
    for s in strategies:
        r = rows(f"{bw}_{s}")[1:]  # the first step allocates
        if len(r) < steps - 1:
            print(f"| {bw} | {s} | stopped after {len(r) + 1} steps (see {bw}_{s}.log) | | | |")
            continue
        tps[s] = sum(x["tokens"] for x in r) / sum(x["step_ms"] for x in r) * 1e3
        throughput[s].append((mbit(bw), tps[s]))
    if bw == slowest:
        r = rows(f"{bw}_atom_diloco")[1:]
        if len(r) >= steps - 1:
            tps["atom_diloco"] = sum(x["tokens"] for x in r) / sum(x["step_ms"] for x in r) * 1e3
    for s in strategies + ("atom_diloco",):
        if s not in tps:
            continue
        r = rows(f"{bw}_{s}")[1:]
        speedup = f"{tps['atom'] / tps[s]:.2f}x" if "atom" in tps and not s.startswith("atom") else ""
        sent = statistics.mean(x["comm_bytes"] for x in r) / 1e6
        print(f"| {bw} | {s} | {statistics.median(x['step_ms'] for x in r):.0f} | {tps[s]:.0f} | {speedup} | "
              f"{sent:.2f} |")
fig, ax = plt.subplots(figsize=(7, 4.5))
for s in strategies:
    if throughput[s]:
        xs, ys = zip(*sorted(throughput[s]))
        ax.plot(xs, ys, marker="o", label=s)
ax.set_xscale("log")
ax.set_xlabel("bandwidth between the nodes (Mbit/s)")
ax.set_ylabel("tokens/s")
ax.set_title("Throughput against bandwidth (2 nodes x 1 rank)")
ax.legend()
fig.tight_layout()
fig.savefig(out / "throughput.png", dpi=120)
fig, ax = plt.subplots(figsize=(7, 4.5))
for s, label in (("atom", f"ATOM, parameters averaged every {average_every} steps"),
                 ("atom_diloco", f"ATOM, DiLoCo outer step every {average_every} steps"),
                 ("dp", "synchronous data parallelism")):
    r = rows(f"{slowest}_{s}")
    tokens, total = [], 0
    for x in r:
        total += x["tokens"]
        tokens.append(total)
    if r:
        ax.plot(tokens, [x["loss"] for x in r], label=label)
ax.set_xlabel("tokens trained")
ax.set_ylabel("train loss")
ax.set_title(f"Loss against tokens at {slowest}")
ax.legend()
fig.tight_layout()
fig.savefig(out / "loss.png", dpi=120)
print(f"\nPlots: {out / 'throughput.png'}, {out / 'loss.png'}")
PY
bench_stamp "$out/atom.md"
