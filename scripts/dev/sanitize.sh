#!/usr/bin/env bash
# The sanitizer and fuzzing stage (CI runs it after scripts/test.sh): a clang build with AddressSanitizer and
# UndefinedBehaviorSanitizer, every report fatal, of the unit and MPI tests and of the libFuzzer targets of
# tests/fuzz; runs those tests, then each fuzzer for FUZZ_SECONDS (default 30) from its seeds. A crash leaves its
# input in BUILD/fuzz-artifacts/TARGET/ and fails the stage: copy it into tests/fuzz/TARGET/ as a regression input
# once fixed. BUILD_DIR (default build-sanitize) picks the build directory.
#   bash scripts/dev/sanitize.sh                 the whole stage
#   FUZZ_SECONDS=600 bash scripts/dev/sanitize.sh fuzz   only the fuzzers, longer
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
build=${BUILD_DIR:-build-sanitize}
seconds=${FUZZ_SECONDS:-30}
what=${1:-all}
case "$what" in
  all|tests|fuzz) ;;
  *) echo "dev/sanitize.sh: unknown stage '$what' (all, tests or fuzz)" >&2; exit 2 ;;
esac

bash scripts/install-deps.sh
tests=(test_core test_kernels test_comm test_cost test_lasp test_sp test_static_sp test_select test_atom test_flexsp
       test_pipeline test_zero test_fuzz_corpus)
fuzzers=(config safetensors indexed_dataset trainer_state profile)
# -O1 and line tables only (the reports name file and line): quick to build; CUDA off (nothing here runs on a GPU).
# Ninja for a new directory: Make builds the targets named below one after another, each on few cores.
generator=()
[[ -f $build/CMakeCache.txt ]] || generator=(-G Ninja)
cmake -S . -B "$build" ${generator[@]+"${generator[@]}"} -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
  -DTRIDENT_CUDA=OFF \
  -DTRIDENT_FUZZ=ON >/dev/null
cmake --build "$build" -j"$(nproc)" --target "${tests[@]}" "${fuzzers[@]/#/fuzz_}"

export UBSAN_OPTIONS="print_stacktrace=1"
if [ "$what" != fuzz ]; then
  # The unit and MPI tests; not the app tests (they need the trident binary) nor the SIMT emulation (minutes even
  # unsanitised). Tests that start MPI run without LeakSanitizer: Open MPI's plugins allocate at MPI_Init, are
  # unloaded at exit and leave leaks no suppression can name. The fuzzers check for leaks.
  # The fast solver against CBC's proven optimum is left to the Release stage: CBC's time limit per instance is wall
  # time, which an instrumented build on a loaded machine does not meet.
  ctest --test-dir "$build" --output-on-failure --timeout 600 -j"$(nproc)" -R '^(kernels|core|fuzz)/' \
    -E '^kernels/(simt|cuda)/'
  ASAN_OPTIONS=detect_leaks=0 ctest --test-dir "$build" --output-on-failure --timeout 600 -j"$(nproc)" -R '^parallel/' \
    -E "^parallel/simt/|^parallel/flexsp/above the exact search's size"
fi

if [ "$what" != tests ]; then
  for name in "${fuzzers[@]}"; do
    corpus=$build/fuzz-corpus/$name      # grows across runs; the seeds in tests/fuzz/ are never written
    artifacts=$build/fuzz-artifacts/$name/
    mkdir -p "$corpus" "$artifacts"
    seeds=(tests/fuzz/"$name")
    if [ "$name" = config ]; then seeds+=(configs); fi
    log=$build/fuzz-$name.log
    if ! "$build/tests/fuzz_$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
         -artifact_prefix="$artifacts" "$corpus" "${seeds[@]}" >"$log" 2>&1; then
      tail -60 "$log"
      echo "dev/sanitize.sh: fuzz_$name found an input that crashes it: $(ls "$artifacts" | head -1) in $artifacts" >&2
      exit 1
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    echo "fuzz $name: $runs inputs in ${seconds} s, corpus $(ls "$corpus" | wc -l) inputs, no crash"
  done
fi
