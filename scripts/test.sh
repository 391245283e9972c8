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

# The fault-tolerant build (docs/elastic.md): trident against the ULFM Open MPI in .deps/ompi5, its tests (label ulfm)
# killing ranks and training under `mpirun --with-ft ulfm`. ULFM_BUILD_DIR (default build-ulfm) picks its directory.
ulfm=${ULFM_BUILD_DIR:-build-ulfm}
generator=()
[[ -f $ulfm/CMakeCache.txt ]] || generator=(-G Ninja)
cmake -S . -B "$ulfm" ${generator[@]+"${generator[@]}"} -DCMAKE_BUILD_TYPE=Release -DTRIDENT_WERROR=ON \
  -DTRIDENT_ULFM=ON -DTRIDENT_CUDA=OFF
cmake --build "$ulfm" -j"$(nproc)" --target test_ulfm trident
ctest --test-dir "$ulfm" -L ulfm --output-on-failure --timeout 600
