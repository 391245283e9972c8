#!/usr/bin/env bash
# parallel.strategy: auto beside every fixed layout, on the emulated cluster (2 nodes x 2 ranks, 1 Gbit between the
# nodes, shared memory inside them) with a workload that mixes batches of short documents and batches of one long
# document (configs/select_mixed.yaml). Runs auto first (it measures a profile at start-up and writes
# RUN_DIR/profile.yaml), then each fixed layout with that profile as parallel.select.profile so its metrics carry the
# same estimates; a layout that cannot hold some batch stops with the reason. With --rounds N, N interleaved rounds of
# every run (each round's auto measures its own profile), so the machine's drift falls on all of them alike. Prints a
# markdown table: tokens/s of each run (median over the rounds, and the range), auto's speedup over it (the ratio of
# the medians; "within the spread" where the ranges overlap), which strategies each ran, and the estimate error
# (median |estimate - measured| / measured over the steps after the first: the cost model's estimate, and the
# prediction corrected by the steps measured before it), per run and per strategy auto ran, and the most a per-step
# choice among the fixed runs could reach (each step's fastest, as every run trains on the same batches), auto by the
# same per-step medians, and its time per layout it ran against the best fixed run's on the same steps. Writes
# runs/bench_select/{select.md, RUN.ROUND/...}. About 30 s a round on 2 cores; needs root.
# Usage: bash scripts/bench/select.sh [--steps 24] [--inter-bw 1gbit | --like TESTBED] [--rounds 3] [--heads 4]
# --like TESTBED (e.g. configs/clusters/a100-8x8-gpt7b.yaml) runs on two levels whose links give this model the
# testbed's ratio of communication to compute inside and between nodes (docs/emucluster.md); the report ends with
# both sides' figures. --heads H sets model.n_head (4 in the config): with 2, fewer heads than the 4 ranks a long
# document needs, Ulysses (and FlexSP, Ulysses inside its groups) stops at groups of 2, so those documents take Ring
# or USP (Ulysses inside a node, Ring across) while short ones can still run data-parallel or in pairs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
die() { echo "bench/select.sh: $*" >&2; exit 2; }
steps=24 inter_bw=1gbit like= rounds=3 heads=4
source scripts/bench/lib.sh
bench_options steps:count inter-bw:rate like:file rounds:count heads:count -- "$@"
trident=$(bench_trident) || exit 2
out=$(bench_out runs/bench_select)

# The corpus: 600 short documents (60-300 bytes) and 10 long ones (4500 bytes), deterministic.
data=runs/data/select_mixed.txt
if [[ ! -s $data ]]; then
  mkdir -p runs/data
  /usr/bin/python3 - "$data.tmp" <<'PY'
import random, sys
random.seed(1)
words = "the of and to in is was for on that with as by at from his her an it are were be this which or have".split()
def doc(n):
    out = []
    while sum(len(w) + 1 for w in out) < n:
        out.append(random.choice(words))
    return " ".join(out)[:n]
docs = [doc(random.randint(60, 300)) for _ in range(600)] + [doc(4500) for _ in range(10)]
random.shuffle(docs)
open(sys.argv[1], "w").write("\n\n\n".join(docs) + "\n")
PY
  mv "$data.tmp" "$data"
fi
data=$(realpath "$data")

# The profile: one whole sequence.
bench_cluster 2 2 "$(realpath configs/select_mixed.yaml)" --set device.memory_gb=4 --set model.n_head="$heads"
export OMP_NUM_THREADS=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
common=(--set train.steps="$steps" --set data.path="$data" --set model.n_head="$heads")
train() {  # NAME ARGS...: 4 ranks on the emulated cluster; a run that stops (a batch it cannot hold) is reported
  local name=$1
  shift
  echo "bench/select.sh: $name" >&2
  timeout 1200 "${emu[@]}" run "${cl[@]}" -- "$trident" train "$(realpath configs/select_mixed.yaml)" "${common[@]}" \
    --set run.dir="$out/$name" "$@" >"$out/$name.log" 2>&1 ||
    echo "bench/select.sh: $name stopped (see $out/$name.log)" >&2
}
for round in $(seq "$rounds"); do
  train "auto.$round"
  profile=(--set parallel.select.profile="$out/auto.$round/profile.yaml")
  train "dp.$round" --set parallel.strategy=dp "${profile[@]}"
  train "flexsp.$round" --set parallel.strategy=flexsp "${profile[@]}"
  for size in 2 4; do
    for method in ulysses ring usp; do
      train "${method}_sp$size.$round" --set parallel.strategy=sp --set parallel.sp.method=$method \
        --set parallel.sp.size=$size "${profile[@]}"
    done
  done
done

/usr/bin/python3 - "$out" "$steps" "$bench_links" "$rounds" "$heads" <<'PY' | tee "$out/select.md"
import json, statistics, sys
from collections import defaultdict
from pathlib import Path
out, steps, links, rounds = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
heads = int(sys.argv[5])
def rows(run):
    p = out / run / "metrics.jsonl"
    return [json.loads(l) for l in open(p)] if p.exists() else []
def tokens_per_s(r):  # over the steps after the first (which allocates), whole-run throughput
    r = r[1:]
    return sum(x["tokens"] for x in r) / sum(x["step_ms"] for x in r) * 1e3 if r else None
def error(done, key):  # over every round's steps after its first
    e = [abs(x[key] - x["step_ms"]) / x["step_ms"] for r in done for x in r[1:] if x.get(key)]
    return statistics.median(e) if e else None
def reason(run):
    lines = [l for l in open(out / f"{run}.log") if l.startswith("trident:") and "error" in l]
    return lines[0].split("error:", 1)[-1].strip()[:140] if lines else "stopped"
def layout(x):
    return f'{x["strategy"]} sp={x["degree"]}' if x["degree"] > 1 else x["strategy"]  # flexsp: degree 0
def runs(name):  # every round's rows
    return [rows(f"{name}.{k}") for k in range(1, rounds + 1)]
def median_tps(name):
    t = [tokens_per_s(r) for r in runs(name) if len(r) == steps]
    return (statistics.median(t), min(t), max(t)) if t else None
auto_tps, auto_low, auto_high = median_tps("auto")
print(f"# parallel.strategy: auto vs fixed layouts, 2 nodes x 2 ranks ({links}), {heads} heads, {steps} steps, "
      f"{rounds} interleaved round(s)\n")
print("| run | tokens/s, median (range) | auto's speedup | strategies run (steps, every round) | estimate error "
      "(median) |")
print("|---|---|---|---|---|")
FIXED = ["dp", "flexsp"] + [f"{m}_sp{d}" for d in (2, 4) for m in ("ulysses", "ring", "usp")]
for name in ["auto"] + FIXED:
    done = runs(name)
    ran = defaultdict(int)
    for r in done:
        for x in r:
            ran[layout(x)] += 1
    ran_text = ", ".join(f"{k} ({v})" for k, v in ran.items())
    if any(len(r) < steps for r in done):
        short = next(k for k, r in enumerate(done, 1) if len(r) < steps)
        print(f"| {name} | cannot run the workload: {reason(f'{name}.{short}')} | | {ran_text} | |")
        continue
    tps, low, high = median_tps(name)
    err, corrected = error(done, "estimate_ms"), error(done, "predicted_ms")
    err_text = f"cost model {err:.0%}, corrected {corrected:.0%}" if err is not None else "n/a"
    speedup = f"{auto_tps / tps:.2f}x" if name != "auto" else ""
    if name != "auto" and rounds > 1 and auto_low <= high and low <= auto_high:
        speedup += " (within the spread)"
    print(f"| {name} | {tps:.0f} ({low:.0f}-{high:.0f}) | {speedup} | {ran_text} | {err_text} |")
print("\nauto's estimate error per strategy it ran (median over its steps after the first, every round; cost model / "
      "corrected):\n")
by = defaultdict(list)
for r in runs("auto"):
    for x in r[1:]:
        by[layout(x)].append(x)
for k, xs in by.items():
    e = statistics.median(abs(x["estimate_ms"] - x["step_ms"]) / x["step_ms"] for x in xs)
    p = statistics.median(abs(x["predicted_ms"] - x["step_ms"]) / x["step_ms"] for x in xs)
    print(f"- {k}: {len(xs)} steps, {e:.0%} / {p:.0%}")
# What choosing per step could gain at most: every run trains on the same batches, so each step's fastest fixed run
# (its median over the rounds) bounds any per-step choice among them.
every_round = {n: runs(n) for n in FIXED}
complete = {n: done for n, done in every_round.items() if all(len(r) == steps for r in done)}
if complete:
    step_ms = {n: [statistics.median(r[k]["step_ms"] for r in done) for k in range(1, steps)]
               for n, done in complete.items()}
    fixed = list(complete)
    tokens = sum(x["tokens"] for x in complete[fixed[0]][0][1:])
    best = min(fixed, key=lambda n: sum(step_ms[n]))
    oracle = sum(min(step_ms[n][k] for n in fixed) for k in range(steps - 1))
    print(f"\nThe most a per-step choice among the fixed runs could reach (each step's fastest run, medians over the "
          f"rounds): {tokens / oracle * 1e3:.0f} tokens/s, {sum(step_ms[best]) / oracle:.2f}x the best fixed run "
          f"({best}, {tokens / sum(step_ms[best]) * 1e3:.0f} tokens/s by the same per-step medians).")
    # auto by the same measure, and where its time went against the best fixed run's on the same steps and rounds.
    autos = runs("auto")
    if all(len(r) == steps for r in autos):
        auto_ms = sum(statistics.median(r[k]["step_ms"] for r in autos) for k in range(1, steps))
        print(f"auto by the same per-step medians: {tokens / auto_ms * 1e3:.0f} tokens/s, "
              f"{sum(step_ms[best]) / auto_ms:.2f}x {best}. Its steps by the layout it ran (every round), its time "
              f"against {best}'s on the same steps:")
        spent = defaultdict(lambda: [0, 0.0, 0.0])
        for a, f in zip(autos, complete[best]):
            for x, y in zip(a[1:], f[1:]):
                s = spent[layout(x)]
                s[0], s[1], s[2] = s[0] + 1, s[1] + x["step_ms"], s[2] + y["step_ms"]
        for k, (n, mine, theirs) in spent.items():
            print(f"- {k}: {n} steps, {mine / 1e3:.1f} s against {theirs / 1e3:.1f} s ({theirs / mine:.2f}x)")
PY
bench_like_report "$out/select.md"
bench_stamp "$out/select.md"
