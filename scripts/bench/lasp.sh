#!/usr/bin/env bash
# Sequence-parallel attention side by side: runs `trident bench sp` under mpirun (LASP-1, LASP-2, Ulysses for
# linear attention; Ulysses and Ring Attention for softmax; one attention layer forward + backward, group sizes T =
# 1, 2, 4, 8 of the ranks) and `trident bench sp --max-length-budget`, then writes OUT/bench_lasp.md (bytes per rank
# vs N at T = 4 and 8, tokens/s, a 1/4 hybrid's layers composed from them, longest N per T) and OUT/bench_lasp.png
# (bytes per rank vs N, log-log).
#   bash scripts/bench/lasp.sh [--ranks 8] [--lengths 1024,2048,...,65536] [--budget GIB] [--max-case-seconds S]
#                              [--out DIR] [--like TESTBED] [--rounds R]
# Defaults: 8 ranks, N = 1K..64K (softmax needs the short ones), 1 GiB per rank, 2 s per case (warm-up + 3 calls;
# a method's longer lengths are skipped past it), OUT = runs/bench_lasp; about 1 minute on 2 cores. --rounds R (default
# 1) times every method R times, a whole sweep a round, and reports each tokens/s as the median with the rounds'
# range, and LASP-2 against Ring Attention at the longest length both ran, saying when the two ranges overlap.
# Builds nothing: TRIDENT names the binary (default build/trident). TIMEOUT_S bounds each mpirun (default 600).
# Every rank runs 1 OpenMP thread; with more ranks than cores the times measure oversubscription, while the bytes
# (communicator counters) and the longest lengths (allocations against a budget) do not depend on the machine.
# --like TESTBED (e.g. configs/clusters/a100-80g-16x8-tnl1b.yaml, LASP's) runs the ranks on an emulated cluster of two
# nodes with two levels of links at the testbed's ratio of communication to compute, for a one-layer linear model of
# the benchmark's width (docs/emucluster.md; root); the report ends with both sides' figures. Without it the ranks
# talk over shared memory.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

die() { echo "bench/lasp.sh: $*" >&2; exit 2; }
is_count() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }

source scripts/bench/lib.sh
ranks=8 lengths=1024,2048,4096,8192,16384,32768,65536 budget=1 max_case_seconds=2 out=runs/bench_lasp like= rounds=1
bench_options ranks:count lengths:words budget:number max-case-seconds:number out:words like:file rounds:count -- "$@"
[[ -z $like ]] || ((ranks % 2 == 0)) || die "--ranks: $ranks ranks cannot be split over two nodes (--like)"
[[ $lengths =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "--lengths: '$lengths' is not a comma-separated list of positive whole numbers"
timeout_s=${TIMEOUT_S:-600}
is_count "$timeout_s" || die "TIMEOUT_S: '$timeout_s' is not a positive whole number of seconds"
trident=$(bench_trident)
command -v mpirun >/dev/null || die "mpirun not found (scripts/install-deps.sh installs Open MPI)"
mkdir -p "$out"
cores=$(nproc)  # before OMP_NUM_THREADS=1: GNU nproc honours it

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMP_NUM_THREADS=1
bench_links=""
if [[ -n $like ]]; then
  # The profile's model: one linear-attention block as wide as the benchmark's layer (H = 8 heads of D = 64).
  bench_cluster 2 $((ranks / 2)) "$(realpath configs/experiments/lasp/scaled_linear.yaml)" --set model.n_layer=1 \
    --set model.n_embd=512 --set model.n_head=8 --set model.max_seq_len=8192 --set device.memory_gb=4
fi
# run NAME ARGS...: trident bench --json sp ARGS under mpirun; JSON lines to OUT/NAME.jsonl
run() {
  local name=$1 rc=0
  shift
  echo "bench/lasp.sh: mpirun -np $ranks trident bench --json sp $* -> $out/$name.jsonl" >&2
  if [[ -n $like ]]; then
    timeout "$timeout_s" "${emu[@]}" run "${cl[@]}" --np "$ranks" -- "$trident" bench --json sp "$@" \
      >"$out/$name.out" 2>"$out/$name.err" || rc=$?
  else
    timeout "$timeout_s" mpirun -np "$ranks" --oversubscribe --bind-to none -x OMP_NUM_THREADS \
      "$trident" bench --json sp "$@" >"$out/$name.out" 2>"$out/$name.err" || rc=$?
  fi
  if ((rc != 0)); then
    tail -n 20 "$out/$name.err" >&2
    ((rc == 124)) && echo "bench/lasp.sh: timed out after ${timeout_s}s (TIMEOUT_S)" >&2
    echo "bench/lasp.sh: mpirun failed (exit $rc); output in $out/$name.out, $out/$name.err" >&2
    exit 1
  fi
  grep '^{' "$out/$name.out" >"$out/$name.jsonl" || true
}
start=$EPOCHREALTIME
for round in $(seq "$rounds"); do
  run "timing.$round" --lengths "$lengths" --max-case-seconds "$max_case_seconds"
done
run max_length --max-length-budget "$budget"
wall=$(/usr/bin/python3 -c "print(round($EPOCHREALTIME - $start))")

/usr/bin/python3 - "$out" "$ranks" "$cores" "$wall" "$budget" "$bench_command" "$bench_links" "$rounds" <<'PY'
import json, statistics, sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

out, ranks, cores, wall, budget, command = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], \
    sys.argv[5], sys.argv[6]
links = f"2 nodes, {sys.argv[7]}" if sys.argv[7] else "shared memory"
rounds = int(sys.argv[8])

def load(name):
    rows = [json.loads(line) for line in (out / f"{name}.jsonl").read_text().splitlines()]
    if not rows:
        sys.exit(f"bench/lasp.sh: {out}/{name}.jsonl is empty; see {out}/{name}.out")
    for r in rows:
        r["T"], r["N"] = int(r["T"]), int(r["N"])
    return rows

timing, longest = load("timing.1"), load("max_length")
for r in timing:
    r["bytes"] = int(r["bytes/rank"])
# tokens/s of every round: (method, attention, T, N) -> [round 1, round 2, ...]; a case a round skipped is absent
speeds = {}
for i in range(1, rounds + 1):
    for r in load(f"timing.{i}"):
        speeds.setdefault((r["method"], r["attention"], r["T"], r["N"]), []).append(float(r["tokens/s"]))
def speed(key):  # the median, and the rounds' range when there are several
    s = speeds[key]
    return f"{statistics.median(s):,.0f}" + (f" ({min(s):,.0f}-{max(s):,.0f})" if len(s) > 1 else "")
label = lambda r: r["method"] if r["method"] != "ulysses" else f"ulysses ({r['attention']})"
methods = list(dict.fromkeys(label(r) for r in timing if r["T"] > 1))
lengths = sorted({r["N"] for r in timing})
Ts = sorted({r["T"] for r in timing})
by = {(label(r), r["T"], r["N"]): r for r in timing}
dash = "—"

md = [f"# Sequence-parallel attention: LASP-1, LASP-2, Ulysses, Ring Attention", "",
      f"`{command}`: {ranks} ranks on {cores} core(s) (1 OpenMP thread each; {links}), {wall} s wall. One attention "
      "layer forward + backward on one document of N tokens, H = 8, D = 64, chunk 64, fp32. Groups of T consecutive "
      "ranks all run at once.", "",
      f"**Timings are dominated by oversubscription** ({ranks} ranks on {cores} cores) and say little about the "
      "methods; the bytes (communicator counters) and the longest lengths (allocations against a budget) are what "
      "this machine measures honestly. A method's longer lengths are skipped (—) once a case is predicted to take "
      "over --max-case-seconds.", ""]

for T in [t for t in (4, 8) if t in Ts]:
    md += [f"## Bytes sent per rank (forward + backward, one layer), T = {T}", "",
           "| N | " + " | ".join(methods) + " | ulysses/lasp2 (linear) |",
           "|---|" + "---|" * (len(methods) + 1)]
    for N in lengths:
        cells = [f"{by[(m, T, N)]['bytes']:,}" if (m, T, N) in by else dash for m in methods]
        u, l = by.get(("ulysses (linear)", T, N)), by.get(("lasp2", T, N))
        cells.append(f"{u['bytes'] / l['bytes']:.0f}x" if u and l and l["bytes"] else dash)
        md.append(f"| {N} | " + " | ".join(cells) + " |")
    for m in ("lasp1", "lasp2"):
        seen = sorted({by[k]["bytes"] for k in by if k[0] == m and k[1] == T})
        verdict = "constant in N" if len(seen) == 1 else f"NOT constant in N: {seen}"
        md.append(f"\n{m} at T = {T}: {verdict}.")
    md.append("")

md += ["## Tokens/s (N / median time of forward + backward, slowest rank)", "",
       *([f"The median of {rounds} rounds (each a whole sweep, one after another), their range in brackets.", ""]
         if rounds > 1 else []),
       "| method | attention | T | " + " | ".join(str(N) for N in lengths) + " |",
       "|---|---|---|" + "---|" * len(lengths)]
for key in dict.fromkeys((r["method"], r["attention"], r["T"]) for r in timing):
    cells = [speed(key + (N,)) if key + (N,) in speeds else dash for N in lengths]
    md.append(f"| {key[0]} | {key[1]} | {key[2]} | " + " | ".join(cells) + " |")
md.append("")

md += ["## LASP-2 against Ring Attention at the longest length both ran", "",
       "| T | N | LASP-2 (linear) tokens/s | Ring (softmax) tokens/s | LASP-2 / Ring | |", "|---|---|---|---|---|---|"]
for T in [t for t in Ts if t > 1]:
    both = [N for N in lengths if ("lasp2", "linear", T, N) in speeds and ("ring", "softmax", T, N) in speeds]
    if not both:
        continue
    N = max(both)
    a, b = speeds[("lasp2", "linear", T, N)], speeds[("ring", "softmax", T, N)]
    overlap = min(a) <= max(b) and min(b) <= max(a)
    verdict = "one round" if rounds == 1 else "inside the rounds' range" if overlap else "outside the rounds' range"
    md.append(f"| {T} | {N:,} | {speed(('lasp2', 'linear', T, N))} | {speed(('ring', 'softmax', T, N))} | "
              f"**{statistics.median(a) / statistics.median(b):.2f}x** | {verdict} |")
md.append("")

# A 1/4 hybrid (LLLS) composed from the one-layer rows: three linear layers on LASP-2 beside one softmax layer
T4 = 4 if 4 in Ts else max(Ts)
kinds = {"lasp2": ("lasp2", "linear"), "ulysses": ("ulysses", "softmax"), "ring": ("ring", "softmax")}
def layer_bytes(m, N):
    r = by.get((label({"method": kinds[m][0], "attention": kinds[m][1]}), T4, N))
    return r["bytes"] if r else None
def layer_s(m, N):  # median seconds of one layer's forward + backward
    s = speeds.get(kinds[m] + (T4, N))
    return N / statistics.median(s) if s else None
def stack(f, layers, N):  # the layers' sum, or None when one is missing
    parts = [f(m, N) for m in layers]
    return None if None in parts else sum(parts)
stacks = {"LLLS, Ulysses": ["lasp2"] * 3 + ["ulysses"], "LLLS, Ring": ["lasp2"] * 3 + ["ring"],
          "LLLL": ["lasp2"] * 4, "SSSS, Ring": ["ring"] * 4}
md += [f"## A 1/4 hybrid (LLLS) at T = {T4}: bytes a rank by layer kind, and four layers together", "",
       "Composed from the one-layer rows above: a hybrid's linear layers run LASP-2 and its softmax layers Ulysses or "
       "Ring Attention on the same group, so its four layers send three LASP-2 layers' bytes and one softmax "
       "layer's; against four layers of the pure linear (LASP-2) and pure softmax (Ring) models. Attention only "
       "(the projections and MLPs are the same in every model); tokens/s = N over the four layers' median times.", "",
       "| N | linear layer (LASP-2) | softmax layer (Ulysses) | softmax layer (Ring) | " +
       " | ".join(f"{k} bytes" for k in stacks) + " | " + " | ".join(f"{k} tokens/s" for k in stacks) + " |",
       "|---|" + "---|" * (3 + 2 * len(stacks))]
fmt = lambda x, spec="{:,.0f}": spec.format(x) if x is not None else dash
for N in lengths:
    cells = [fmt(layer_bytes(m, N)) for m in ("lasp2", "ulysses", "ring")]
    cells += [fmt(stack(layer_bytes, layers, N)) for layers in stacks.values()]
    cells += [fmt(N / t if t else None) for t in (stack(layer_s, layers, N) for layers in stacks.values())]
    md.append(f"| {N:,} | " + " | ".join(cells) + " |")
md += ["", "The linear layers' bytes stay flat in N; the softmax layer's grow with N as its method's do.", ""]

lT = sorted({r["T"] for r in longest})
md += [f"## Longest N at {budget} GiB per rank (one layer's forward + backward buffers)", "",
       "| method | attention | " + " | ".join(f"T = {T}" for T in lT) + f" | growth T = 1 -> {lT[-1]} |",
       "|---|---|" + "---|" * (len(lT) + 1)]
base = {r["attention"]: r["N"] for r in longest if r["T"] == 1}
for key in dict.fromkeys((r["method"], r["attention"]) for r in longest if r["T"] > 1):
    row = {r["T"]: r["N"] for r in longest if (r["method"], r["attention"]) == key}
    row[1] = base[key[1]]  # T = 1 is the kernel
    cells = [f"{row[T]:,}" if T in row else dash for T in lT]
    growth = f"{row[lT[-1]] / row[1]:.2f}x" if lT[-1] in row and row[1] else dash
    md.append(f"| {key[0]} | {key[1]} | " + " | ".join(cells) + f" | {growth} |")
md += ["", "T = 1 is the plain kernel. Counted per rank: qkv, out, dout, dqkv, and each method's own buffers at its "
       "peak (LASP: D×D states and gathered states; Ulysses: head-sharded qkv/out/lse, dout/dqkv and all-to-all "
       "buffers; Ring: K/V blocks in flight, dK/dV accumulators, lse, online-softmax state); the exact list is at "
       "`Needs` in app/bench/sp.cpp. Weights, other layers' activations and O(tile) scratch are not counted.", ""]

report = "\n".join(md)
(out / "bench_lasp.md").write_text(report + "\n")
print(report)

fig, ax = plt.subplots(figsize=(8, 5))
for T in sorted(({max(Ts), 4} & set(Ts)) - {1}, reverse=True):  # the largest T solid, T = 4 dashed
    for i, m in enumerate(methods):
        pts = [(N, by[(m, T, N)]["bytes"]) for N in lengths if (m, T, N) in by]
        if pts:
            ax.plot(*zip(*pts), "-" if T == max(Ts) else "--", marker="o", color=f"C{i}", label=f"{m}, T = {T}")
ax.set_xscale("log", base=2)
ax.set_yscale("log")
ax.set_xlabel("sequence length N (tokens)")
ax.set_ylabel("bytes sent per rank (forward + backward, one layer)")
ax.set_title("Sequence-parallel attention traffic, H = 8, D = 64, fp32")
ax.grid(alpha=0.3, which="both")
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(out / "bench_lasp.png", dpi=120)
print(f"bench/lasp.sh: wrote {out}/bench_lasp.md and {out}/bench_lasp.png")
PY
bench_like_report "$out/bench_lasp.md"
bench_stamp "$out/bench_lasp.md"
