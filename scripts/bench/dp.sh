#!/usr/bin/env bash
# Data-parallel strong scaling on this machine: trains one config with `mpirun -np R` for each rank count R (same
# global batch, train.batch_tokens, split over the ranks; OMP_NUM_THREADS = max(1, cores / R)), each in a fresh
# run.dir under OUT, then reads every metrics.jsonl and prints (and writes to OUT/dp_scaling.md) a markdown table:
# median step time, tokens/s, speed-up over the first rank count, efficiency against the cores in use, gradient
# traffic per rank per step, and the largest relative loss difference from the first run (DP should match it).
#   bash scripts/bench/dp.sh [--config FILE] [--ranks "1 2 4"] [--steps N] [--warmup N] [--out DIR]
#                            [--set key=value ...]
# Without --config it trains configs/quickstart.yaml's model on synthetic data (no corpus to prepare). Evaluation,
# sampling and periodic checkpoints are off; --set overrides apply after the benchmark's own. TRIDENT names the
# binary (default build/trident); TIMEOUT_S bounds each mpirun (default 600); THREADS_PER_RANK fixes the thread
# count instead of cores / R. Needs the built binary: run scripts/quickstart.sh or scripts/test.sh first.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

die() { echo "bench/dp.sh: $*" >&2; exit 2; }
is_count() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }
# CPU seconds: used by the whole machine (/proc/stat), and by this script's finished children (the mpirun trees)
machine_cpu() { awk -v hz="$(getconf CLK_TCK)" '/^cpu /{print ($2+$3+$4+$7+$8+$9)/hz}' /proc/stat; }
# (`times` must run in this shell, not in a $(...) subshell, which has no finished children of its own)
children_cpu() {
  times >"$out/.times"
  awk 'NR==2{split($1,u,/[ms]/); split($2,s,/[ms]/); print u[1]*60+u[2]+s[1]*60+s[2]}' "$out/.times"
}

source scripts/bench/lib.sh
config="" ranks="1 2 4" steps=20 warmup=3 out=runs/bench_dp sets=()
bench_options config:words ranks:words steps:count warmup:words out:words set:sets -- "$@"

read -r -a rank_list <<<"$ranks"
((${#rank_list[@]})) || die "--ranks: empty list"
for r in "${rank_list[@]}"; do is_count "$r" || die "--ranks: '$r' is not a positive whole number"; done
[[ $warmup =~ ^[0-9]+$ ]] || die "--warmup: '$warmup' is not a whole number"
((warmup < steps)) || die "--warmup ($warmup) must be below --steps ($steps): no step would be measured"
if [[ -n ${THREADS_PER_RANK:-} ]] && ! is_count "$THREADS_PER_RANK"; then
  die "THREADS_PER_RANK: '$THREADS_PER_RANK' is not a positive whole number"
fi
timeout_s=${TIMEOUT_S:-600}
is_count "$timeout_s" || die "TIMEOUT_S: '$timeout_s' is not a positive whole number of seconds"
trident=${TRIDENT:-build/trident}
[[ -x $trident ]] || die "no trident binary at '$trident' (build it, or set TRIDENT)"

bench=(--set train.steps="$steps" --set train.eval_every=0 --set sample.tokens=0 --set checkpoint.every=0
       --set train.resume=never)
# quickstart.yaml warms up for 20 steps; keep the relation warmup_steps <= steps valid for short runs
bench+=(--set train.warmup_steps=$((steps < 5 ? steps : 5)))
if [[ -z $config ]]; then
  config=configs/quickstart.yaml
  # the quickstart model on generated documents, so no corpus has to be prepared first
  bench+=(--set data.kind=synthetic --set data.preset=wikipedia --set data.synthetic_documents=10000)
fi
[[ -f $config ]] || die "--config: '$config' not found"
# a bad --set or config fails here, with trident's message, before any run starts
"$trident" config "$config" "${bench[@]}" "${sets[@]}" --set run.dir="$out/np1" >/dev/null

# a previous benchmark is kept, not overwritten; every run starts in an empty run.dir
if [[ -e $out ]]; then mv "$out" "$out.$(date +%Y%m%d-%H%M%S)"; fi
mkdir -p "$out"
# every rank count runs the same binary, even if build/ is rebuilt while the benchmark runs
cp "$trident" "$out/trident"
trident=$out/trident

cores=$(nproc)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
: >"$out/runs.tsv"
for r in "${rank_list[@]}"; do
  threads=${THREADS_PER_RANK:-$((cores / r > 0 ? cores / r : 1))}
  dir=$out/np$r
  echo "bench/dp.sh: $r rank(s) x $threads thread(s), $steps steps -> $dir" >&2
  children_cpu >"$out/.ours0"
  start=$EPOCHREALTIME machine0=$(machine_cpu)
  rc=0
  # --bind-to none: for np <= 2 Open MPI pins each rank to one core, which would confine a 1-rank run's OpenMP
  # threads to a single core and make the baseline look half as fast as it is
  OMP_NUM_THREADS=$threads timeout "$timeout_s" \
    mpirun -np "$r" --oversubscribe --bind-to none -x OMP_NUM_THREADS \
    "$trident" train "$config" "${bench[@]}" "${sets[@]}" --set run.dir="$dir" >"$out/np$r.out" 2>&1 || rc=$?
  if ((rc != 0)); then
    tail -n 20 "$out/np$r.out" >&2
    ((rc == 124)) && echo "bench/dp.sh: $r rank(s): timed out after ${timeout_s}s (TIMEOUT_S)" >&2
    echo "bench/dp.sh: $r rank(s): mpirun failed (exit $rc); full output in $out/np$r.out" >&2
    exit 1
  fi
  end=$EPOCHREALTIME machine1=$(machine_cpu)
  children_cpu >"$out/.ours1"
  ours0=$(<"$out/.ours0") ours1=$(<"$out/.ours1")
  wall=$(/usr/bin/python3 -c "print(round($end - $start, 1))")
  # cores kept busy by other processes during the run: this machine is shared, and a build running next to the
  # benchmark can halve its numbers without any other sign
  other=$(/usr/bin/python3 -c \
    "print(round(max(0.0, ($machine1 - $machine0) - ($ours1 - $ours0)) / ($end - $start), 2))")
  # the final checkpoint cannot be switched off; the benchmark needs only metrics.jsonl and trident.log
  rm -rf "$dir/checkpoints"
  printf '%s\t%s\t%s\t%s\t%s\n' "$r" "$threads" "$wall" "$other" "$dir" >>"$out/runs.tsv"
done
rm -f "$out/.times" "$out/.ours0" "$out/.ours1" "$out/trident"

command="${THREADS_PER_RANK:+THREADS_PER_RANK=$THREADS_PER_RANK }$bench_command"
/usr/bin/python3 - "$out" "$cores" "$warmup" "$config" "$command" <<'PY'
import json, re, statistics, sys
from pathlib import Path

out, cores, warmup, config, command = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]

def fail(message):
    sys.exit(f"bench/dp.sh: {message}")

runs = []
for line in (out / "runs.tsv").read_text().splitlines():
    ranks, threads, wall, other, run_dir = line.split("\t")
    run_dir = Path(run_dir)
    records = []
    with (run_dir / "metrics.jsonl").open() as f:
        for number, text in enumerate(f, 1):
            try:
                records.append(json.loads(text))
            except json.JSONDecodeError as e:
                fail(f"{run_dir}/metrics.jsonl:{number}: not a JSON line ({e})")
    records.sort(key=lambda r: r["step"])
    ranks = int(ranks)
    if any(r["world_size"] != ranks for r in records):
        fail(f"{run_dir}: metrics.jsonl says world_size {records[0]['world_size']}, expected {ranks}")
    # the thread count trident actually ran with, from its first log line ("N rank(s) x T thread(s)")
    log = (run_dir / "trident.log").read_text()
    found = re.search(r"(\d+) rank\(s\) x (\d+) thread\(s\)", log)
    threads = int(found.group(2)) if found else int(threads)
    measured = records[warmup:]
    runs.append({
        "ranks": ranks, "threads": threads, "wall_s": float(wall), "other_load": float(other),
        "cores_used": min(ranks * threads, cores),
        "step_ms": statistics.median(r["step_ms"] for r in measured),
        # medians, not totals: on a shared machine a few disturbed steps should not decide the result
        "tokens_per_s": statistics.median(r["tokens_per_s"] for r in measured),
        "comm_mb": statistics.median(r["comm_bytes"] for r in measured) / 1e6,
        "loss": {r["step"]: r["loss"] for r in records},
        "steps": len(records),
    })

base = runs[0]
rows = []
for run in runs:
    speedup = run["tokens_per_s"] / base["tokens_per_s"]
    efficiency = speedup / (run["cores_used"] / base["cores_used"])
    common = [s for s in base["loss"]
              if s in run["loss"] and base["loss"][s] is not None and run["loss"][s] is not None]
    if run is base:
        loss = "(reference)"
    elif len(common) != base["steps"] or len(common) != run["steps"]:
        loss = "n/a (steps differ)"
    else:
        loss = f"{max(abs(run['loss'][s] - base['loss'][s]) / abs(base['loss'][s]) for s in common):.1e}"
    oversubscribed = " (oversubscribed)" if run["ranks"] * run["threads"] > cores else ""
    rows.append(f"| {run['ranks']} | {run['threads']}{oversubscribed} | {run['cores_used']} | {run['step_ms']:.0f} | "
                f"{run['tokens_per_s']:.0f} | {speedup:.2f}x | {efficiency:.0%} | {run['comm_mb']:.2f} | {loss} | "
                f"{run['wall_s']:.0f} | {run['other_load']:.2f} |")

b = base["ranks"]
busy = [str(run["ranks"]) for run in runs if run["other_load"] > 0.1]
warning = [f"**Warning:** other processes kept cores busy during the run(s) with {', '.join(busy)} rank(s) "
           "(column other load); rerun on an idle machine.", ""] if busy else []
report = "\n".join([
    f"# Data-parallel scaling: {config}",
    "",
    f"`{command}` on {cores} core(s); {base['steps']} steps per run, the first {warmup} dropped as warm-up; the "
    "global batch (train.batch_tokens) is the same for every rank count, so this is strong scaling.",
    "",
    f"| ranks | threads/rank | cores used | median step ms | tokens/s | speed-up vs {b} rank(s) | "
    f"efficiency vs cores used | comm MB/rank/step | loss max rel. diff vs {b} rank(s) | wall s | other load |",
    "|---|---|---|---|---|---|---|---|---|---|---|",
    *rows,
    "",
    *warning,
    "- median step ms, tokens/s: medians over the measured steps of rank 0's step_ms and tokens_per_s (global-batch "
    "tokens per second).",
    f"- efficiency vs cores used = speed-up / (cores used / cores used by {b} rank(s)); cores used = "
    f"min(ranks x threads, {cores}). With OMP_NUM_THREADS = cores / ranks every run uses the same cores (one rank "
    "already uses them all through OpenMP), so efficiency = speed-up: ideal is 1.00x, not ranks x.",
    "- comm MB/rank/step: bytes rank 0 handed to collectives per step (metrics.jsonl comm_bytes: the gradient "
    "allreduce plus a few scalars); a ring allreduce moves about 2(R-1)/R times that over the wire.",
    "- wall s: the whole mpirun, including start-up, the sgemm roof measurement and the final checkpoint.",
    "- other load: cores kept busy by other processes during the run (machine CPU time minus the benchmark's, over "
    "wall time); above ~0.1 the run shared its cores and its numbers are too low.",
    "",
])
print(report)
(out / "dp_scaling.md").write_text(report + "\n")
PY
bench_stamp "$out/dp_scaling.md"
