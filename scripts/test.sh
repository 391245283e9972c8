#!/usr/bin/env bash
# The test command: installs dependencies, builds with warnings as errors, runs the whole suite under ctest.
# BUILD_DIR (default build) picks the build directory.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/install-deps.sh
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DTRIDENT_WERROR=ON
cmake --build "$build" -j"$(nproc)"
ctest --test-dir "$build" --output-on-failure --timeout 600
