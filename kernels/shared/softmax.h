#pragma once
// Numerically stable softmax statistics of one row: max and log-sum-exp, shared by cross-entropy on both backends.
#include <cmath>

#include "kernels/shared/hd.h"

namespace trident {

TRIDENT_HD float row_logsumexp(const float* x, int n) {
  float m = -INFINITY;
  for (int i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) sum += std::exp(x[i] - m);
  return m + std::log(sum);
}

}  // namespace trident
