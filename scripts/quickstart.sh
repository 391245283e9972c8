#!/usr/bin/env bash
# The main job on the embedded default: installs dependencies, builds, validates configs/quickstart.yaml and runs
# the kernel self-check and benchmark. (Training the quickstart model with 2 MPI ranks replaces the self-check
# when the trainer lands; see README "Status".)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/install-deps.sh
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j"$(nproc)" --target trident

export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}
"$build/trident" config configs/quickstart.yaml "$@"
"$build/trident" bench gemm
"$build/trident" bench kernels
