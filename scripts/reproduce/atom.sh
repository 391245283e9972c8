#!/usr/bin/env bash
# ATOM reproduced (scripts/reproduce/atom.py): ATOM's peers against GPipe on the emulated cluster (2 nodes x 1 rank;
# without root, 2 local ranks) whose link gives a pipeline's stage boundary the weight it has on ATOM's testbed
# (configs/clusters/rtx4090-8x1-gpt6.7b.yaml) at 10 Gbit/s, 1 Gbit/s and 100 Mbit/s between its peers, a peer swapping
# a model four times its device budget against the model resident, and GPT-3 6.7B on 8 RTX 4090 peers against GPipe
# from the cost model beside the paper's claim. Writes results/atom/ (atom.md, two PNGs, runs/).
#   bash scripts/reproduce/atom.sh [--smoke | --quick | --full] [--out DIR]
# --smoke: the 10 Gbit/s link, 4 steps (~2 minutes, what CI runs); --quick (default): three links, 8 steps (~65
# minutes on 2 cores: at the 100 Mbit/s ratio a pipeline step takes a minute, and the peers' rounds and their last
# synchronization several); --full: 16 steps and a budget of 1/8.
# Builds nothing: TRIDENT names the binary (default build/trident).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
exec /usr/bin/python3 scripts/reproduce/atom.py "$@"
