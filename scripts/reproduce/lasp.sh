#!/usr/bin/env bash
# LASP reproduced (scripts/reproduce/lasp.py): the longest sequence and tokens/s against ranks for LASP-1, LASP-2,
# Ulysses and Ring Attention from whole-model training runs here, and TNL-1B on 8-128 A100-80G from the cost model
# beside the paper's numbers. Writes results/lasp/ (lasp.md, four PNGs, runs/).
#   bash scripts/reproduce/lasp.sh [--smoke | --quick | --full] [--out DIR]
# --smoke: 1-2 ranks, tiny budget (~1 minute, what CI runs); --quick (default): 1-8 ranks (~3 minutes on 2 cores);
# --full: larger budgets and more steps. Builds nothing: TRIDENT names the binary (default build/trident).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
exec /usr/bin/python3 scripts/reproduce/lasp.py "$@"
