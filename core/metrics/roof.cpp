#include "core/metrics/roof.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "kernels/cpu/gemm.h"

namespace trident {

double measure_sgemm_gflops(double min_seconds) {
  const int64_t M = 1024, N = 3072, K = 768;
  std::vector<float> A(M * K, 0.5f), B(K * N, 0.25f), C(M * N);
  auto call = [&] { cpu::gemm(Trans::no, Trans::no, M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f, C.data(), N); };
  call();  // warm-up: thread pool and pages
  using clock = std::chrono::steady_clock;
  double best = 0;
  auto start = clock::now();
  do {  // the best of repeated calls: the roof is what the machine can do, not what a noisy moment gave
    auto t0 = clock::now();
    call();
    best = std::max(best, 2.0 * M * N * K / std::chrono::duration<double>(clock::now() - t0).count() / 1e9);
  } while (std::chrono::duration<double>(clock::now() - start).count() < min_seconds);
  return best;
}

}  // namespace trident
