#pragma once
// Numerically stable softmax statistics of one row: max and log-sum-exp, shared by cross-entropy on both backends.
#include <cmath>

#include "kernels/shared/exp.h"
#include "kernels/shared/hd.h"

namespace trident {

TRIDENT_HD float row_logsumexp(const float* x, int n) {
  float m = -INFINITY;
  TRIDENT_SIMD_REDUCTION(max, m)
  for (int i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  float sum = 0.0f;
  TRIDENT_SIMD_REDUCTION(+, sum)
  for (int i = 0; i < n; ++i) sum += kernel_exp(x[i] - m);
  return m + std::log(sum);
}

}  // namespace trident
