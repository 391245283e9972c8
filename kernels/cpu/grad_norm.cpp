#include "kernels/cpu/grad_norm.h"

#include <algorithm>
#include <vector>

namespace trident::cpu {

double squared_norm(const float* x, int64_t n) {
  constexpr int64_t kBlock = 1 << 14;
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<double> partial(static_cast<std::size_t>(blocks));
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    double sum = 0.0;
    const int64_t end = std::min(n, (b + 1) * kBlock);
    for (int64_t i = b * kBlock; i < end; ++i) sum += static_cast<double>(x[i]) * x[i];
    partial[b] = sum;
  }
  double total = 0.0;
  for (double p : partial) total += p;
  return total;
}

void scale(float* x, int64_t n, float s) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

}  // namespace trident::cpu
