#!/usr/bin/env bash
# Memory per rank under parallel.zero.stage and train.recompute, measured by training here (scripts/bench/memory.py):
# GPT-2 124M's model states per rank on 1/2/4 ranks (formula, log and peak), the longest sequence LASP-2 trains in
# a fixed device.memory_gb at stages 0, 1 and 2 with recompute none, selective and full, recomputation's price in
# tokens/s, and the stages' price in step time.
#   bash scripts/bench/memory.sh [--ranks 1,2,4,8] [--states-ranks 1,2,4] [--memory-gb 0.03] [--rounds 3] [--out DIR]
# Writes OUT/memory.md (default runs/bench_memory; an existing folder is moved aside). About 5 minutes on 2 cores.
# Builds nothing: TRIDENT names the binary (default build/trident).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

die() { echo "bench/memory.sh: $*" >&2; exit 2; }

source scripts/bench/lib.sh
ranks=1,2,4,8 states_ranks=1,2,4 memory_gb=0.03 rounds=3 out=runs/bench_memory
bench_options ranks:words states-ranks:words memory-gb:number rounds:count out:words -- "$@"
for option in ranks states_ranks; do
  [[ ${!option} =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] ||
    die "--${option//_/-}: '${!option}' is not a comma-separated list of positive whole numbers"
done
exec /usr/bin/python3 scripts/bench/memory.py --ranks "$ranks" --states-ranks "$states_ranks" \
  --memory-gb "$memory_gb" --rounds "$rounds" --out "$out" --command "$bench_command"
