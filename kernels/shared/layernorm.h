#pragma once
// Layernorm row arithmetic shared by the CPU and CUDA backends. Statistics in two passes (mean, then centred
// variance), which stays accurate when |mean| >> stddev, unlike E[x^2] - E[x]^2.
#include <cmath>

#include "kernels/shared/hd.h"

namespace trident {

constexpr float kLayernormEps = 1e-5f;

struct RowStats {
  float mean;
  float rstd;  // 1 / sqrt(var + eps), biased variance as in PyTorch
};

TRIDENT_HD RowStats layernorm_row_stats(const float* x, int C) {
  float sum = 0.0f;
  for (int i = 0; i < C; ++i) sum += x[i];
  float mean = sum / C;
  float sq = 0.0f;
  for (int i = 0; i < C; ++i) sq += (x[i] - mean) * (x[i] - mean);
  return {mean, 1.0f / std::sqrt(sq / C + kLayernormEps)};
}

}  // namespace trident
