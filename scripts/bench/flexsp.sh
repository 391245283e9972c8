#!/usr/bin/env bash
# FlexSP training against its baselines on the emulated cluster (8 ranks: 2 nodes x 4 ranks by default, 1 Gbit
# between the nodes, shared memory inside them), for each synthetic long-tail length preset
# (configs/experiments/flexsp/flexsp_longtail.yaml):
# in one run of this script, per preset and round,
#   flexsp    groups of several sizes per micro-batch (parallel.strategy: flexsp; its profile is measured at start-up
#             and written to RUN_DIR/profile.yaml, which the two baselines then plan with)
#   batchada  the best single group size per batch (parallel.flexsp.degrees: single)
#   static    Ulysses over all 8 ranks for every document (parallel.strategy: sp, sp.size 8)
# With --attention linear the model is linear attention: FlexSP and BatchAda run LASP inside their groups
# (heterogeneous LASP), static is LASP over all 8 ranks, and a fourth run, flexsp_ulysses, is FlexSP with Ulysses
# inside.
# With --rounds N the runs are repeated in N interleaved rounds (each round's FlexSP measures its own profile), so the
# machine's drift falls on all of them alike.
# Prints a markdown table: measured tokens/s (steps after the first; the median over the rounds and the range),
# FlexSP's speedup over each baseline (the ratio of the medians; "within the spread" where the ranges overlap), the
# share of the step rank 0 spent inside all-to-alls (metrics alltoall_ms), planning (median plan_ms, plans ready in
# time), and the cost model's error on FlexSP's groups (median |estimated - measured| / measured, per group size, from
# group_times: the profile's estimate over every step after the first, and the planner's corrected estimate over the
# steps after the eighth, once corrections have settled; a rank's last micro-batch, whose time carries the gradient
# reduction, left out as the corrections leave it out); then the paper-scale figures of `trident plan` (GPT-7B on
# 8 x 8 A100s, configs/experiments/flexsp/flexsp_plan_gpt7b.yaml) beside them. Writes runs/bench_flexsp/{flexsp.md,
# PRESET_RUN.ROUND/...}. About 10 minutes a round on 2 cores; needs root.
# Usage: bash scripts/bench/flexsp.sh [--steps 12] [--rounds 1] [--inter-bw 1gbit | --like TESTBED]
#                                     [--presets wikipedia,commoncrawl,github] [--attention softmax|linear]
#                                     [--max-len 4096] [--memory-gb 0.02] [--nodes 2] [--alltoall-group G]
#                                     [--length-scale X] [--batch-tokens 16384] [--calibrate]
# --like TESTBED (e.g. configs/clusters/a100-8x8-gpt7b.yaml) runs on two levels whose links give this model the
# testbed's ratio of communication to compute inside and between nodes (docs/emucluster.md); the report ends with
# both sides' figures. --nodes 4 (or 8) spreads the 8 ranks over that many nodes; with --like, --alltoall-group G
# scales the node links from the testbed's all-to-all over G devices (e.g. 64 for a100-8x8: 4.9 GB/s a GPU, where
# static SP spans all 8 nodes) instead of its inter_node link, so static SP here, spanning every node, pays what
# static SP there pays (docs/emucluster.md). With --like the documents are scaled too: a document of L tokens there
# weighs its attention against its linear layers as one of L x (alpha2 / alpha1 here over the testbed's) does here,
# and the links match the ratios at every length (`emucluster.sh up --scale-lengths`; docs/emucluster.md, "Scaled to
# a testbed"), so data.synthetic_length_scale is that factor (like.json's length_scale) unless --length-scale sets
# it; without --like it is 1. --calibrate (with --like) first measures static SP's all-to-all share on that cluster and
# brings it up again with links scaled so that the share is the testbed's (below: the calibration).
# --max-len cuts documents (and sets model.max_seq_len) at another length; --memory-gb sets device.memory_gb. With
# --max-len 8192 --memory-gb 0.025 the longest documents need a group of all 8 ranks, across the nodes, while the
# rest fit groups inside a node.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
die() { echo "bench/flexsp.sh: $*" >&2; exit 2; }
steps=12 rounds=1 inter_bw=1gbit like=
presets=wikipedia,commoncrawl,github attention=softmax max_len=4096 memory_gb=0.02 nodes=2 alltoall_group=
length_scale= batch_tokens=16384 calibrate=
source scripts/bench/lib.sh
bench_options steps:count rounds:count inter-bw:rate like:file presets:words attention:one-of-softmax,linear \
  max-len:count memory-gb:number nodes:one-of-2,4,8 alltoall-group:count length-scale:number batch-tokens:count \
  calibrate:flag -- "$@"
[[ -z $alltoall_group || -n $like ]] || die "--alltoall-group belongs with --like TESTBED"
[[ -z $calibrate || -n $like ]] || die "--calibrate belongs with --like TESTBED"
[[ -z $calibrate || $attention == softmax ]] || die "--calibrate needs --attention softmax (static SP's all-to-alls)"
ranks_per_node=$((8 / nodes))
static_method=ulysses
[[ $attention == linear ]] && static_method=lasp
IFS=, read -r -a preset_list <<<"$presets"
for p in "${preset_list[@]}"; do
  [[ $p == wikipedia || $p == commoncrawl || $p == github ]] ||
    die "--presets: unknown preset '$p' (allowed: wikipedia, commoncrawl, github)"
done
trident=$(bench_trident) || exit 2
out=$(bench_out runs/bench_flexsp)
config=$(realpath configs/experiments/flexsp/flexsp_longtail.yaml)

# The profile for --like: this model at one sequence up to max-len (memory-gb only squeezes training's groups).
scaling=()  # how the links and documents follow the testbed (with --like)
[[ -z $alltoall_group ]] || scaling=(--alltoall-group "$alltoall_group")
[[ -n $length_scale ]] || scaling+=(--scale-lengths)
cluster_args=("$nodes" "$ranks_per_node" "$config" ${scaling[@]+"${scaling[@]}"} --set model.attention="$attention"
  --set model.max_seq_len="$max_len" --set device.memory_gb=4)
bench_cluster "${cluster_args[@]}"
if [[ -z $length_scale ]]; then
  length_scale=1
  [[ -z $like ]] || length_scale=$(/usr/bin/python3 -c 'import json, sys
o = json.load(open(sys.argv[1]))
print("%.6g" % o["length_scale"])' "$out/like.json")
fi
export OMP_NUM_THREADS=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
train() {  # NAME ARGS...: 8 ranks on the emulated cluster; a run that stops is reported, the others go on
  local name=$1
  shift
  echo "bench/flexsp.sh: $name" >&2
  timeout 1200 "${emu[@]}" run "${cl[@]}" -- "$trident" train "$config" --set train.steps="$steps" \
    --set model.attention="$attention" --set model.max_seq_len="$max_len" --set data.synthetic_max_length="$max_len" \
    --set data.synthetic_length_scale="$length_scale" --set train.batch_tokens="$batch_tokens" \
    --set device.memory_gb="$memory_gb" --set run.dir="$out/$name" "$@" >"$out/$name.log" 2>&1 ||
    echo "bench/flexsp.sh: $name stopped (see $out/$name.log)" >&2
}
static_sp=(--set parallel.strategy=sp --set parallel.sp.method=$static_method --set parallel.sp.size=8
  --set train.micro_batches=2)

# --calibrate: static SP's all-to-all share here, measured over 6 steps a preset on the cluster just brought up, against
# the testbed's (trident plan's estimate of static SP on GPT-7B, 512-sequence batches of each preset): the links are
# scaled by the ratio of their odds (share / (1 - share)), through the slowdown `trident like` divides the profile's
# rate by, and the cluster brought up again, twice. Compute that runs slower in training than in the profile (ranks
# and the TCP stack sharing the cores) then costs the all-to-alls their testbed's share of the step again.
if [[ -n $calibrate ]]; then
  for preset in "${preset_list[@]}"; do
    "$trident" plan configs/experiments/flexsp/flexsp_plan_gpt7b.yaml --cluster "$like" --batch-sequences 512 \
      --batches 2 --set data.preset="$preset" --json >"$out/calibrate_${preset}_plan.jsonl" \
      2>"$out/calibrate_${preset}_plan.log" ||
      die "--calibrate: trident plan failed (see $out/calibrate_${preset}_plan.log)"
  done
  echo "Calibrated (--calibrate): static SP's all-to-all share of its steps, here at the links for ranks" \
    "computing S x slower than the profile, against the testbed's (trident plan's estimate for GPT-7B, mean over" \
    "the presets):" >"$out/calibration.md"
  # Two passes: part of an all-to-all's time does not follow the link's rate (the TCP stack's own time), so one
  # pass leaves the share short of the testbed's.
  for pass in 1 2; do
    runs=() plans=()
    for preset in "${preset_list[@]}"; do
      train "calibrate${pass}_${preset}" "${static_sp[@]}" --set data.preset="$preset" --set train.steps=6
      runs+=("$out/calibrate${pass}_${preset}") plans+=("$out/calibrate_${preset}_plan.jsonl")
    done
    calibration=$(/usr/bin/python3 scripts/cluster/calibrate.py "$out/like.json" --runs "${runs[@]}" \
      --plans "${plans[@]}") || die "--calibrate: a calibration run failed (see $out/calibrate${pass}_*.log)"
    read -r calibrated assumed here_share there_share <<<"$calibration"
    "${emu[@]}" down "${cl[@]}" >/dev/null
    bench_cluster "${cluster_args[@]}" --slowdown "$calibrated"
    echo "- pass $pass: S = $assumed: $here_share here, $there_share there; links brought up again for" \
      "S = $calibrated (calibrate${pass}_*)" >>"$out/calibration.md"
  done
fi

for round in $(seq "$rounds"); do
  for preset in "${preset_list[@]}"; do
    train "${preset}_flexsp.$round" --set data.preset="$preset"
    profile=(--set data.preset="$preset" --set parallel.select.profile="$out/${preset}_flexsp.$round/profile.yaml")
    train "${preset}_batchada.$round" --set parallel.flexsp.degrees=single "${profile[@]}"
    train "${preset}_static.$round" "${static_sp[@]}" "${profile[@]}"
    if [[ $attention == linear ]]; then
      train "${preset}_flexsp_ulysses.$round" --set parallel.flexsp.inner=ulysses "${profile[@]}"
    fi
  done
done
"$trident" plan configs/experiments/flexsp/flexsp_plan_gpt7b.yaml --batch-sequences 512 --batches 2 --json \
  >"$out/paper_plan.jsonl" \
  2>"$out/paper_plan.log" || echo "bench/flexsp.sh: trident plan failed (see $out/paper_plan.log)" >&2

report_args=("$out" "$steps" "$bench_links" "$presets" "$attention" "$max_len" "$rounds" "$nodes" "$length_scale"
  "$ranks_per_node")
/usr/bin/python3 - "${report_args[@]}" <<'PY' | tee "$out/flexsp.md"
import json, statistics, sys
from collections import defaultdict
from pathlib import Path
out, steps, links, presets = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4].split(",")
attention, max_len, rounds, nodes = sys.argv[5], sys.argv[6], int(sys.argv[7]), int(sys.argv[8])
scale, ranks_per_node = float(sys.argv[9]), int(sys.argv[10])
method = "LASP" if attention == "linear" else "Ulysses"  # inside FlexSP's and BatchAda's groups, and static
def rows(name):
    p = out / name / "metrics.jsonl"
    return [json.loads(l) for l in open(p)] if p.exists() else []
def after_first(r):  # the first step allocates
    return r[1:]
def tokens_per_s(r):
    r = after_first(r)
    return sum(x["tokens"] for x in r) / sum(x["step_ms"] for x in r) * 1e3 if r else None
def alltoall_share(r):
    r = after_first(r)
    return sum(x.get("alltoall_ms", 0) for x in r) / sum(x["step_ms"] for x in r) if r else None
def reason(name):
    lines = [l for l in open(out / f"{name}.log") if l.startswith("trident:") and "error" in l]
    return lines[0].split("error:", 1)[-1].strip()[:140] if lines else "stopped"
def runs(name):  # every round's rows
    return [rows(f"{name}.{k}") for k in range(1, rounds + 1)]
def spread(name):  # (median, low, high) tokens/s over the rounds that finished
    t = [tokens_per_s(r) for r in runs(name) if len(r) == steps]
    return (statistics.median(t), min(t), max(t)) if t else None
print(f"# FlexSP vs BatchAda vs static {method} ({attention} attention, {method} inside groups), {nodes} nodes x "
      f"{ranks_per_node} ranks ({links}), documents "
      f"{f'the preset lengths x {scale:.4g}, ' if scale != 1 else ''}up to {max_len} tokens, {steps} steps, "
      f"{rounds} interleaved round(s)\n")
print("| preset | run | tokens/s, median (range) | FlexSP's speedup | all-to-all share | layouts (steps, every round) "
      "| plan ms (median), ready |")
print("|---|---|---|---|---|---|---|")
errors, carried = {}, defaultdict(int)
for preset in presets:
    flex = spread(f"{preset}_flexsp")
    for run in ("flexsp", "batchada", "static") + (("flexsp_ulysses",) if attention == "linear" else ()):
        name = f"{preset}_{run}"
        done = runs(name)
        if any(len(r) < steps for r in done):
            k, r = next((k, r) for k, r in enumerate(done, 1) if len(r) < steps)
            print(f"| {preset} | {run} | stopped after {len(r)} steps: {reason(f'{name}.{k}')} | | | | |")
            continue
        tps, low, high = spread(name)
        speedup = ""
        if flex and run != "flexsp":
            overlap = flex[1] <= high and low <= flex[2]
            speedup = f"{flex[0] / tps:.2f}x" + (" (within the spread)" if overlap and rounds > 1 else "")
        layouts = defaultdict(int)
        for r in done:
            for x in r:
                layouts[x.get("groups") or f'{x["strategy"]} sp={x["degree"]}'] += 1
        common = sorted(layouts.items(), key=lambda kv: -kv[1])[:3]
        layout_text = ", ".join(f"{k} ({v})" for k, v in common) + (", ..." if len(layouts) > 3 else "")
        plans = [x["plan_ms"] for r in done for x in r if x.get("plan_ms") is not None]
        ready = sum(1 for r in done for x in r[1:] if x.get("plan_ready"))
        plan_text = f"{statistics.median(plans):.2f}, {ready}/{sum(len(r) - 1 for r in done)}" if plans else ""
        share = statistics.median(alltoall_share(r) for r in done)
        print(f"| {preset} | {run} | {tps:.0f} ({low:.0f}-{high:.0f}) | {speedup} | {share:.0%} | {layout_text} | "
              f"{plan_text} |")
        if run == "flexsp":
            by_degree, settled, hindsight = defaultdict(list), defaultdict(list), defaultdict(list)
            for r in done:
                for step, x in enumerate(r):
                    if step == 0:
                        continue
                    # g[3]: the plan's corrected estimate; g[4]: whether the time carries the gradient reduction
                    others = any(len(g) < 5 or not g[4] for mb in x.get("group_times", []) for g in mb)
                    counted = defaultdict(list)  # degree -> (estimate, measured) of the groups the corrections use
                    for mb in x.get("group_times", []):
                        for degree, est, meas, *rest in mb:
                            if others and len(rest) > 1 and rest[1]:
                                carried[preset] += 1
                                continue
                            counted[degree].append((est, meas))
                            by_degree[degree].append(abs(est - meas) / meas)
                            if step >= 8 and rest:
                                settled[degree].append(abs(rest[0] - meas) / meas)
                    # The bound on any one factor a degree: the step's own measured / estimated, known afterwards.
                    for degree, g in counted.items():
                        ratio = sum(m for _, m in g) / sum(e for e, _ in g) if sum(e for e, _ in g) else 1
                        if step >= 8:
                            hindsight[degree] += [abs(ratio * e - m) / m for e, m in g]
            errors[preset] = {d: (len(e), statistics.median(e),
                                  statistics.median(settled[d]) if settled[d] else None,
                                  statistics.median(hindsight[d]) if hindsight[d] else None)
                              for d, e in sorted(by_degree.items())}
print("\nThe cost model on FlexSP's groups (median |estimated - measured| / measured: the profile's estimate over "
      "every step after the first; the planner's corrected estimate after the eighth step; groups counted; left out "
      "where the step had others, as by the corrections: the groups of a rank's last micro-batch, whose time carries "
      "the gradient reduction overlapped with its backward):\n")
for preset, by in errors.items():
    print(f"- {preset}: " + ", ".join(
        f"degree {d}: {e:.0%}" + (f", corrected {s:.0%} after 8 steps" if s is not None else "") +
        (f" (the step's own ratio: {h:.0%})" if h is not None else "") + f" ({n})"
        for d, (n, e, s, h) in by.items()) + f"; {carried[preset]} left out")
print("\n(the step's own ratio: each group's estimate times its step's measured / estimated for its degree, known only "
      "after the step: how close any one correction a degree and step could come, the rest being the spread of the "
      "step's groups of one degree)")
plans = [json.loads(l) for l in open(out / "paper_plan.jsonl")] if (out / "paper_plan.jsonl").exists() else []
if plans:
    print("\nPaper scale, estimated by `trident plan` (GPT-7B, 8 x 8 A100-40GB, 384K context, 512-sequence batches):\n")
    for p in plans:
        print(f'- batch {p["batch"]}: FlexSP {p["flexsp"]["time_s"]:.1f} s, {p["speedup_vs_static_sp"]:.2f}x static SP '
              f'(degree {p["static_sp"]["degree"]}), {p["speedup_vs_batchada"]:.2f}x BatchAda '
              f'(degree {p["batchada"]["degree"]})')
PY
if [[ -f $out/calibration.md ]]; then { echo; cat "$out/calibration.md"; } >>"$out/flexsp.md"; fi
bench_like_report "$out/flexsp.md"
bench_stamp "$out/flexsp.md"
