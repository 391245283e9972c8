#!/usr/bin/env bash
# FlexSP reproduced (scripts/reproduce/flexsp.py): FlexSP against BatchAda and static SP per length preset and
# context limit from training runs on the emulated cluster (2 nodes x 4 ranks on two levels of links at the paper's
# testbed's ratio of communication to compute, configs/clusters/a100-8x8-gpt7b.yaml; without root, 8 local ranks),
# and GPT-7B/13B/30B on the paper's 64 A100s from the cost model beside the paper's numbers. Writes
# results/flexsp/ (flexsp.md, two PNGs, runs/).
#   bash scripts/reproduce/flexsp.sh [--smoke | --quick | --full] [--out DIR]
# --smoke: one setting, 3 steps (~2 minutes, what CI runs); --quick (default): 4 settings (~8 minutes on 2 cores);
# --full: 6 settings, 12 steps, 5 planned batches. Builds nothing: TRIDENT names the binary (default build/trident).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
exec /usr/bin/python3 scripts/reproduce/flexsp.py "$@"
