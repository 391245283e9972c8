#pragma once
// OpenMP threads wait passively (they sleep at a barrier instead of spinning) unless OMP_WAIT_POLICY says otherwise.
// Measured on 2 cores (GPT-2 small, B=4, T=64): the same step time on an idle machine, and 1.2-1.4x faster with one
// competing busy process, where spinning threads burn the time slices the working ones need (scripts/bench/cpu.sh).
// The test binaries too: ctest runs one test a core, and a swapped-model case took 1.6 s beside a busy process
// waiting passively, 5.6 s spinning (60 s beside another spinning test binary).
// OpenMP reads the variable once, when it loads before main, so the process runs itself again with it set: call this
// first thing in main, before MPI or any thread starts.
#include <unistd.h>

#include <cstdlib>

namespace trident {

inline void wait_passively_unless_told(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  if (setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return;
  execv("/proc/self/exe", argv);  // returns only on failure: then run on with OpenMP's default
}

}  // namespace trident
