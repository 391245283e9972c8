#include "kernels/cpu/grad_norm.h"

#include <algorithm>
#include <vector>

namespace trident::cpu {

namespace {

// One block's sum of squares. kLanes independent accumulators break the chain of dependent additions, so the loop
// runs at the speed of memory (one vector of doubles per lane group) instead of one addition per FMA latency;
// they are combined in a fixed order, so the result depends on the block alone.
double block_squared_norm(const float* x, int64_t n) {
  constexpr int64_t kLanes = 16;
  double lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
#pragma omp simd
    for (int64_t k = 0; k < kLanes; ++k) lane[k] += static_cast<double>(x[i + k]) * x[i + k];
  for (int64_t k = 0; i < n; ++i, ++k) lane[k] += static_cast<double>(x[i]) * x[i];
  for (int64_t width = kLanes / 2; width > 0; width /= 2)
    for (int64_t k = 0; k < width; ++k) lane[k] += lane[k + width];
  return lane[0];
}

}  // namespace

double squared_norm(const float* x, int64_t n) {
  constexpr int64_t kBlock = 1 << 14;
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<double> partial(static_cast<std::size_t>(blocks));
#pragma omp parallel for schedule(guided)
  for (int64_t b = 0; b < blocks; ++b)
    partial[b] = block_squared_norm(x + b * kBlock, std::min(kBlock, n - b * kBlock));
  double total = 0.0;
  for (double p : partial) total += p;
  return total;
}

void scale(float* x, int64_t n, float s) {
#pragma omp parallel for simd schedule(guided)
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

}  // namespace trident::cpu
