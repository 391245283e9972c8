#!/usr/bin/env bash
# parallel.zero's stages over a limited link: data parallelism's step time at stages 0, 1, 2 and 3 on the emulated
# cluster (2 nodes x 2 ranks; --inter-bw between the nodes, or --like TESTBED's two levels), configs/quickstart.yaml's
# model on synthetic documents, in interleaved rounds. Prints (and writes to OUT/zero.md) a markdown table: each
# stage's median step time over the rounds (the range of the runs' medians), its ratio to stage 0's, the bytes rank 0
# hands its communicators a step, and at stages 2 and 3 the time a step waited for the stage's collectives
# (`zero_wait_ms`: what the compute did not hide). About 2 minutes a round on 2 cores; needs root (else
# the 4 ranks run here with no link limit, and the report says so).
# Usage: bash scripts/bench/zero.sh [--steps 8] [--inter-bw 200mbit | --like TESTBED] [--rounds 3] [--out DIR]
#        [--set key=value ...]
# --like TESTBED (e.g. configs/clusters/a100-8x8-gpt7b.yaml): two levels whose links give the model the testbed's
# ratio of communication to compute (docs/emucluster.md); the report ends with both sides' figures.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
die() { echo "bench/zero.sh: $*" >&2; exit 2; }
steps=8 inter_bw=200mbit like= rounds=3 out=runs/bench_zero sets=()
source scripts/bench/lib.sh
bench_options steps:count inter-bw:rate like:file rounds:count out:words set:sets -- "$@"
((steps >= 3)) || die "--steps: $steps; the first step is left out and a median needs two more"
trident=$(bench_trident) || exit 2
config=$(realpath configs/quickstart.yaml)
run=(--set data.kind=synthetic --set data.preset=wikipedia --set data.synthetic_documents=10000
     --set train.steps="$steps" --set train.warmup_steps=1 --set train.eval_every=0 --set sample.tokens=0
     --set checkpoint.every=0 --set parallel.strategy=dp)
# a bad --set fails here, with trident's message, before the cluster comes up
"$trident" config "$config" "${run[@]}" ${sets[@]+"${sets[@]}"} --set run.dir=/tmp/bench-zero-check >/dev/null
out=$(bench_out "$out")
cp "$trident" "$out/trident"  # every run the same binary, even if build/ is rebuilt meanwhile
trident=$out/trident
if [[ $(id -u) == 0 ]] && command -v ip >/dev/null && command -v tc >/dev/null; then
  bench_cluster 2 2 "$config"
  launch=("${emu[@]}" run "${cl[@]}" --)
else
  bench_links="no emulated links (needs root, ip and tc): 4 local ranks"
  launch=(mpirun --oversubscribe -np 4 --bind-to none)
fi
export OMP_NUM_THREADS=1 OMPI_MCA_btl_vader_single_copy_mechanism=none

for round in $(seq "$rounds"); do
  for stage in 0 1 2 3; do
    echo "bench/zero.sh: round $round, stage $stage" >&2
    timeout 900 "${launch[@]}" "$trident" train "$config" "${run[@]}" ${sets[@]+"${sets[@]}"} \
      --set parallel.zero.stage=$stage --set run.dir="$out/z$stage.$round" >"$out/z$stage.$round.log" 2>&1 ||
      die "stage $stage, round $round failed: see $out/z$stage.$round.log"
  done
done

/usr/bin/python3 - "$out" "$rounds" "$bench_links" "$steps" <<'PY' | tee "$out/zero.md"
import json, statistics, sys
from pathlib import Path
out, rounds, links, steps = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
def rows(stage, k):
    return [json.loads(l) for l in open(out / f"z{stage}.{k}" / "metrics.jsonl")][1:]  # the first step allocates
step = {z: [statistics.median(r["step_ms"] for r in rows(z, k)) for k in range(1, rounds + 1)] for z in range(4)}
sent = {z: statistics.median(r["comm_bytes"] for r in rows(z, 1)) for z in range(4)}
waited = {z: [statistics.median(r["zero_wait_ms"] for r in rows(z, k)) for k in range(1, rounds + 1)]
          for z in (2, 3)}
base = statistics.median(step[0])
print(f"# parallel.zero.stage 0-3 under data parallelism, 2 nodes x 2 ranks ({links})\n")
print(f"`configs/quickstart.yaml`'s model on synthetic documents, {steps} steps a run (the first left out), stages "
      f"0 to 3 in turn, {rounds} round(s): the median step time (the range of the runs' medians), its ratio to "
      "stage 0's, and the bytes rank 0 hands its communicators a step (stage 0's all-reduce; at stage 1 the "
      "parameters' all-gather beside it; at stage 2 the reduce-scatters of each pass and the all-gather; at stage 3 "
      "the reduce-scatters and each pass's gathers of the layers' weights), and the time rank 0 waited in a step for "
      "the stage's collectives to complete (`zero_wait_ms`, the medians' median and range: the part the compute did "
      "not hide).\n")
print("| stage | step (ms), median (range) | / stage 0 | sent a step (MiB) | / stage 0 | waited a step (ms) |")
print("|---|---|---|---|---|---|")
for z in range(4):
    m = statistics.median(step[z])
    w = f"{statistics.median(waited[z]):,.0f} ({min(waited[z]):,.0f}-{max(waited[z]):,.0f})" if z in waited else ""
    print(f"| {z} | {m:,.0f} ({min(step[z]):,.0f}-{max(step[z]):,.0f}) | {m / base:.2f}x | {sent[z] / 2**20:,.2f} | "
          f"{sent[z] / sent[0]:.2f}x | {w} |")
PY
bench_like_report "$out/zero.md"
bench_stamp "$out/zero.md"
echo "bench/zero.sh: wrote $out/zero.md" >&2
