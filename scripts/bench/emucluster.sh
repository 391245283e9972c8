#!/usr/bin/env bash
# How closely the emulated cluster's links follow their configured rate, and how long bring-up and teardown take.
# For each rate: scripts/cluster/emucluster.sh up with 2 nodes x 1 rank at that rate, `trident bench comm` (its
# send/recv ping-pong between the two nodes: one flow over both links), down. Prints one markdown row per rate and
# message size: configured and measured Mbit/s, their ratio, and the seconds `up` and `down` took.
# Then two levels (2 nodes x 2 ranks, a link a rank): for each --intra-rates rate, with node links at --inter-rate,
# the send/recv of the pairs inside nodes (each pair over its two rank links) and across nodes (both pairs sharing
# each node's link), measured against configured per rank: how fast a rank link this machine's TCP carries.
#
#   scripts/bench/emucluster.sh [--rates 50mbit,100mbit,1gbit] [--max-bytes 4194304]
#                               [--intra-rates 500mbit,1gbit,2.5gbit,5gbit] [--inter-rate 200mbit]
#
# TRIDENT picks the binary (default build/trident). Needs root. The cluster is named bench-emu-PID and always taken
# down, also when interrupted.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
die() { echo "bench/emucluster.sh: $*" >&2; exit 2; }
rates=50mbit,100mbit,1gbit max_bytes=4194304 intra_rates=500mbit,1gbit,2.5gbit,5gbit inter_rate=200mbit
source scripts/bench/lib.sh
bench_options rates:words max-bytes:count intra-rates:words inter-rate:rate -- "$@"
trident=${TRIDENT:-build/trident}
[[ -x $trident ]] || die "no trident binary at '$trident' (build it, or set TRIDENT)"
emu=(bash scripts/cluster/emucluster.sh)
cl=(--name "bench-emu-$$")
out=$(mktemp -d)
trap '"${emu[@]}" down "${cl[@]}" >/dev/null 2>&1; rm -rf "$out"' EXIT
export OMP_NUM_THREADS=1 OMPI_MCA_btl_vader_single_copy_mechanism=none

bench_stamp
echo "| configured | message | measured Mbit/s | measured / configured | up s | down s |"
echo "|---|---|---|---|---|---|"
IFS=, read -r -a rate_list <<<"$rates"
for rate in "${rate_list[@]}"; do
  start=$EPOCHREALTIME
  "${emu[@]}" up "${cl[@]}" --nodes 2 --ranks-per-node 1 --inter-bw "$rate" >/dev/null
  up_s=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
  timeout 600 "${emu[@]}" run "${cl[@]}" -- "$trident" bench comm --max-bytes "$max_bytes" --json >"$out/bench.jsonl"
  start=$EPOCHREALTIME
  "${emu[@]}" down "${cl[@]}" >/dev/null
  down_s=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
  /usr/bin/python3 - "$out/bench.jsonl" "$rate" "$up_s" "$down_s" <<'PY'
import json, re, sys
path, rate, up_s, down_s = sys.argv[1:]
number, unit = re.fullmatch(r"([0-9.]+)([kmgt]?)bit", rate).groups()
configured = float(number) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}[unit]
rows = [json.loads(l) for l in open(path) if l.startswith("{")]
for r in rows:
    if r["bench"].startswith("sendrecv") and r["nodes"] == "2" and int(r["bytes"]) >= 65536:
        measured = r["busbw GB/s"] * 8e9
        print(f"| {rate} | {int(r['bytes']) // 1024} KiB | {measured / 1e6:.1f} | {measured / configured:.3f} "
              f"| {up_s} | {down_s} |")
PY
done

echo
echo "Two levels, 2 nodes x 2 ranks, node links at $inter_rate (2 ranks share each), send/recv of every pair at once:"
echo
echo "| rank links | message | pairs | measured Mbit/s a rank | configured a rank | measured / configured |"
echo "|---|---|---|---|---|---|"
IFS=, read -r -a intra_list <<<"$intra_rates"
for rate in "${intra_list[@]}"; do
  "${emu[@]}" up "${cl[@]}" --nodes 2 --ranks-per-node 2 --inter-bw "$inter_rate" --intra-bw "$rate" >/dev/null
  timeout 600 "${emu[@]}" run "${cl[@]}" -- "$trident" bench comm --max-bytes "$max_bytes" --json >"$out/bench.jsonl"
  "${emu[@]}" down "${cl[@]}" >/dev/null
  /usr/bin/python3 - "$out/bench.jsonl" "$rate" "$inter_rate" <<'PY'
import json, re, sys
path, rate, inter = sys.argv[1:]
def bits(r):
    number, unit = re.fullmatch(r"([0-9.]+)([kmgt]?)bit", r).groups()
    return float(number) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}[unit]
expected = {"1": bits(rate), "2": min(bits(rate), bits(inter) / 2)}  # across nodes: 2 ranks share a node link
rows = [json.loads(l) for l in open(path) if l.startswith("{")]
for r in rows:
    if r["bench"].startswith("sendrecv") and r["ranks"] == "2" and int(r["bytes"]) >= 1048576:
        measured = r["busbw GB/s"] * 8e9
        where = "inside nodes" if r["nodes"] == "1" else "across nodes"
        print(f"| {rate} | {int(r['bytes']) // 1024} KiB | {where} | {measured / 1e6:.1f} | "
              f"{expected[r['nodes']] / 1e6:.0f} | {measured / expected[r['nodes']]:.3f} |")
PY
done
