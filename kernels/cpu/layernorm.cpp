#include "kernels/cpu/layernorm.h"

#include <algorithm>

#include "kernels/cpu/row_blocks.h"
#include "kernels/shared/layernorm.h"

namespace trident::cpu {

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                       int64_t N, int C) {
#pragma omp parallel for schedule(guided)
  for (int64_t t = 0; t < N; ++t) {
    const float* x = inp + t * C;
    float* y = out + t * C;
    RowStats s = layernorm_row_stats(x, C);
#pragma omp simd
    for (int i = 0; i < C; ++i) y[i] = (x[i] - s.mean) * s.rstd * weight[i] + bias[i];
    mean[t] = s.mean;
    rstd[t] = s.rstd;
  }
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int64_t N, int C) {
  // dinp = rstd * (g - mean(g) - xhat * mean(g * xhat)), with g = dout * weight and xhat the normalised input.
#pragma omp parallel for schedule(guided)
  for (int64_t t = 0; t < N; ++t) {
    const float* dy = dout + t * C;
    const float* x = inp + t * C;
    float* dx = dinp + t * C;
    float g_mean = 0.0f, gx_mean = 0.0f;
    for (int i = 0; i < C; ++i) {
      float g = dy[i] * weight[i];
      g_mean += g;
      gx_mean += g * (x[i] - mean[t]) * rstd[t];
    }
    g_mean /= C;
    gx_mean /= C;
#pragma omp simd
    for (int i = 0; i < C; ++i) {
      float xhat = (x[i] - mean[t]) * rstd[t];
      dx[i] += layernorm_dinp(dy[i] * weight[i], xhat, g_mean, gx_mean, rstd[t]);
    }
  }
  reduce_rows_deterministic(dweight, N, C, [&](int64_t t, float* acc) {
    const float* dy = dout + t * C;
    const float* x = inp + t * C;
    for (int i = 0; i < C; ++i) acc[i] += dy[i] * (x[i] - mean[t]) * rstd[t];
  });
  reduce_rows_deterministic(dbias, N, C, [&](int64_t t, float* acc) {
    const float* dy = dout + t * C;
    for (int i = 0; i < C; ++i) acc[i] += dy[i];
  });
}

}  // namespace trident::cpu
