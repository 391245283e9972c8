#!/usr/bin/env bash
# How closely the emulated cluster's links follow their configured rate, and how long bring-up and teardown take.
# For each rate: scripts/cluster/emucluster.sh up with 2 nodes x 1 rank at that rate, `trident bench comm` (its
# send/recv ping-pong between the two nodes: one flow over both links), down. Prints one markdown row per rate and
# message size: configured and measured Mbit/s, their ratio, and the seconds `up` and `down` took.
#
#   scripts/bench/emucluster.sh [--rates 50mbit,100mbit,1gbit] [--max-bytes 4194304]
#
# TRIDENT picks the binary (default build/trident). Needs root. The cluster is named bench-emu-PID and always taken
# down, also when interrupted.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
die() { echo "bench/emucluster.sh: $*" >&2; exit 2; }
rates=50mbit,100mbit,1gbit max_bytes=4194304
source scripts/bench/lib.sh
bench_options rates:words max-bytes:count -- "$@"
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
