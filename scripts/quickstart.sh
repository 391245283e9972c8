#!/usr/bin/env bash
# The main job on the embedded default: installs dependencies, builds, assembles the corpus (Debian's fortune
# cookies) and trains configs/quickstart.yaml, then plots the loss curve to runs/quickstart/loss.png.
# Extra arguments go to `trident train` (e.g. --set train.steps=50).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/install-deps.sh
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j"$(nproc)" --target trident

bash scripts/data/fortunes_corpus.sh runs/data/fortunes.txt

# a previous quickstart run is kept, not overwritten
if [[ -e runs/quickstart ]]; then mv runs/quickstart "runs/quickstart.$(date +%Y%m%d-%H%M%S)"; fi

export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}
"$build/trident" train configs/quickstart.yaml "$@"
/usr/bin/python3 scripts/plot.py runs/quickstart -o runs/quickstart/loss.png
