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

// rstd of a row of C values from the sum of their squared deviations from the mean.
TRIDENT_HD float layernorm_rstd(float centred_sq_sum, int C) {
  return 1.0f / std::sqrt(centred_sq_sum / C + kLayernormEps);
}

TRIDENT_HD RowStats layernorm_row_stats(const float* x, int C) {
  float sum = 0.0f;
  for (int i = 0; i < C; ++i) sum += x[i];
  float mean = sum / C;
  float sq = 0.0f;
  for (int i = 0; i < C; ++i) sq += (x[i] - mean) * (x[i] - mean);
  return {mean, layernorm_rstd(sq, C)};
}

// One element of dinp = rstd * (g - mean(g) - xhat * mean(g * xhat)), with g = dout * weight and xhat the
// normalised input; g_mean and gx_mean are the row means.
TRIDENT_HD float layernorm_dinp(float g, float xhat, float g_mean, float gx_mean, float rstd) {
  return rstd * (g - g_mean - xhat * gx_mean);
}

}  // namespace trident
