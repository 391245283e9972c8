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
# --like TESTBED (configs/clusters/rtx4090-8x1-gpt6.7b.yaml: ATOM's 8 RTX 4090 peers with GPT-3 6.7B) reads
# --bandwidths as the testbed's link between peers and sets the emulated link to the rate at which a pipeline's stage
# boundary weighs on this model's stage as on the testbed's (`trident like --exchange pipeline`: a token's activations
# one way per second a stage computes it); it runs GPipe, ATOM averaging every --average-every steps, and ATOM
# averaging as seldom as a round needs to stay hidden (the steps a round of the parameters takes on that link), and
# appends each link's table of both sides. Data parallelism and DiLoCo are left out there.
# Usage: bash scripts/bench/atom.sh [--bandwidths "10gbit 1gbit 100mbit"] [--steps 16] [--average-every 4]
#                                   [--like TESTBED] [--set key=value ...]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
die() { echo "bench/atom.sh: $*" >&2; exit 2; }
bandwidths="10gbit 1gbit 100mbit" steps=16 average_every=4 like= sets=()
source scripts/bench/lib.sh
bench_options bandwidths:words steps:count average-every:count like:file set:sets -- "$@"
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
testbed=$like
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
# like_at BW: the emulated cluster at TESTBED's ratios with its peers' link set to BW (not in a subshell: the EXIT
# trap takes it down); writes to $out/BW_hidden_every the steps a round of the parameters takes here (the scaling's
# round tokens over a peer's tokens a step, rounded up).
like_at() {
  local bw=$1 copy=$out/testbed_$1.yaml
  /usr/bin/python3 - "$testbed" "$copy" "$bw" <<'PY'
import re, sys, yaml
source, copy, bw = sys.argv[1:]
value, unit = re.fullmatch(r"([0-9.]+)(kbit|mbit|gbit)", bw).groups()
cluster = yaml.safe_load(open(source))
bits = float(value) * {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9}[unit]
cluster["network"]["inter_node"]["bandwidth_gb_per_s"] = bits / 8e9
open(copy, "w").write(f"# {source} with the link between peers at {bw}\n" + yaml.safe_dump(cluster, sort_keys=False))
PY
  like=$copy bench_cluster 2 1 "$config" --exchange pipeline "${sets[@]}"
  mv "$out/like.md" "$out/like_$bw.md"
  mv "$out/like.json" "$out/like_$bw.json"
  /usr/bin/python3 -c '
import json, math, sys
here, tokens = json.load(open(sys.argv[1]))["here"], int(sys.argv[2]) // 2
print(max(1, math.ceil(here["round_tokens"] / tokens)))' "$out/like_$bw.json" "$(batch_tokens)" \
    >"$out/${bw}_hidden_every"
}
batch_tokens() {
  OMP_NUM_THREADS=1 "$trident" config "$config" "${sets[@]}" | sed -n 's/^  batch_tokens: \([0-9][0-9]*\).*/\1/p'
}
for bw in "${bandwidth_list[@]}"; do
  "${emu[@]}" down "${cl[@]}" >/dev/null 2>&1 || true
  if [[ -n $testbed ]]; then
    like_at "$bw"
    hidden=$(<"$out/${bw}_hidden_every")
    # At a slow link's ratio a step that waits for a round of the parameters legitimately outlasts the watchdog's
    # default deadline (run.watchdog_s, docs/reliability.md).
    slow=(--set run.watchdog_s=7200)
    for strategy in pipeline atom; do train "${bw}_$strategy" --set parallel.strategy="$strategy" "${slow[@]}"; done
    train "${bw}_atom_hidden" --set parallel.strategy=atom --set parallel.atom.average_every="$hidden" "${slow[@]}"
    continue
  fi
  "${emu[@]}" up "${cl[@]}" --nodes 2 --ranks-per-node 1 --inter-bw "$bw" >/dev/null
  for strategy in atom pipeline dp; do train "${bw}_$strategy" --set parallel.strategy="$strategy"; done
  if [[ $bw == "$slowest" ]]; then
    train "${bw}_atom_diloco" --set parallel.strategy=atom --set parallel.atom.averaging=diloco
  fi
done

if [[ -n $testbed ]]; then
  /usr/bin/python3 - "$out" "$steps" "$average_every" "$testbed" "${bandwidth_list[@]}" <<'PY' | tee "$out/atom.md"
import json, re, statistics, sys
from pathlib import Path
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
out, steps, average_every, testbed = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
bandwidths = sys.argv[5:]
def rows(name):
    p = out / name / "metrics.jsonl"
    return [json.loads(l) for l in open(p)] if p.exists() else []
def here_rate(bw):
    m = re.search(r"^emucluster: --intra-bw \S+ --inter-bw (\d+)kbit", (out / f"like_{bw}.md").read_text(), re.M)
    return f"{int(m.group(1)) / 1e3:.3g} Mbit/s"
print(f"# ATOM vs GPipe at the ratios of {testbed}, 2 nodes x 1 rank, {steps} steps of "
      "configs/experiments/atom/atom_peers_cpu.yaml\n")
print("The link between the two nodes is set, for each of the testbed's link speeds, so that a pipeline's stage "
      "boundary takes the same share of a stage's compute here as there (`trident like --exchange pipeline`, the "
      "tables below). ATOM runs averaging every "
      f"{average_every} steps and averaging as seldom as a round of its parameters needs to stay hidden on that link "
      "(the steps a round takes here, rounded up).\n")
print("| testbed link | link here | strategy | averaging every | step ms (median) | tokens/s | ATOM / pipeline "
      "| MB sent a step (rank 0) |")
print("|---|---|---|---|---|---|---|---|")
series = {"pipeline": [], "atom": [], "atom_hidden": []}
for i, bw in enumerate(bandwidths):
    hidden = int((out / f"{bw}_hidden_every").read_text())
    tps = {}
    for s in series:
        r = rows(f"{bw}_{s}")[1:]  # the first step allocates
        if len(r) < steps - 1:
            continue
        tps[s] = sum(x["tokens"] for x in r) / sum(x["step_ms"] for x in r) * 1e3
        series[s].append((i, tps[s]))
    for s in series:
        every = {"pipeline": "", "atom": f"{average_every}", "atom_hidden": f"{hidden}"}[s]
        if s == "atom_hidden" and hidden >= steps:
            every += f" (no round within {steps} steps)"
        if s not in tps:
            print(f"| {bw} | {here_rate(bw)} | {s} | {every} | stopped after {len(rows(f'{bw}_{s}'))} steps "
                  f"(see {bw}_{s}.log) | | | |")
            continue
        r = rows(f"{bw}_{s}")[1:]
        speedup = f"{tps[s] / tps['pipeline']:.2f}x" if s != "pipeline" and "pipeline" in tps else ""
        sent = statistics.mean(x["comm_bytes"] for x in r) / 1e6
        print(f"| {bw} | {here_rate(bw)} | {s} | {every} | {statistics.median(x['step_ms'] for x in r):.0f} | "
              f"{tps[s]:.0f} | {speedup} | {sent:.2f} |")
fig, ax = plt.subplots(figsize=(7, 4.5))
for s, label in (("pipeline", "GPipe"), ("atom", f"ATOM, averaging every {average_every} steps"),
                 ("atom_hidden", "ATOM, averaging as seldom as a round needs")):
    if series[s]:
        xs, ys = zip(*series[s])
        ax.plot(xs, ys, marker="o", label=label)
ax.set_xticks(range(len(bandwidths)), [f"{bw} equivalent" for bw in bandwidths])
ax.set_yscale("log")
ax.set_ylabel("tokens/s")
ax.set_title(f"Throughput at the ratios of {Path(testbed).stem} (2 nodes x 1 rank)")
if any(series.values()):
    ax.legend()
fig.tight_layout()
fig.savefig(out / "throughput.png", dpi=120)
print(f"\nPlot: {out / 'throughput.png'}\n")
for bw in bandwidths:
    print(f"### At {bw} between the testbed's peers\n")
    print((out / f"like_{bw}.md").read_text().strip() + "\n")
PY
  bench_stamp "$out/atom.md"
  exit 0
fi
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
