#!/usr/bin/env bash
# The test command: installs dependencies, builds with warnings as errors, runs the whole suite under ctest.
# BUILD_DIR (default build) picks the build directory.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/install-deps.sh
build=${BUILD_DIR:-build}
# Ninja for a new build directory: one graph over every target, so both cores stay busy to the end (an existing
# directory keeps the generator it was made with).
generator=()
[[ -f $build/CMakeCache.txt ]] || generator=(-G Ninja)
cmake -S . -B "$build" ${generator[@]+"${generator[@]}"} -DCMAKE_BUILD_TYPE=Release -DTRIDENT_WERROR=ON
cmake --build "$build" -j"$(nproc)"
echo "test.sh: installed and built in $SECONDS s"
# One test a core: most tests are short processes that start MPI, Python or a shell and leave a core idle meanwhile;
# those that must not overlap share a RESOURCE_LOCK (tests/CMakeLists.txt).
ctest --test-dir "$build" --output-on-failure --timeout 600 -j"$(nproc)"
