#include "kernels/cpu/rmsnorm.h"

#include "kernels/shared/hd.h"
#include "kernels/shared/rmsnorm.h"

namespace trident::cpu {

void rmsnorm_forward(float* out, float* rrms, const float* inp, const float* gate, int64_t rows, int D) {
#pragma omp parallel for schedule(guided)
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = inp + r * D;
    float sq = 0.0f;
    TRIDENT_SIMD_REDUCTION(+, sq)
    for (int i = 0; i < D; ++i) sq += x[i] * x[i];
    const float inv = rmsnorm_rrms(sq, D);
    float* y = out + r * D;
    if (gate == nullptr) {
      for (int i = 0; i < D; ++i) y[i] = x[i] * inv;
    } else {
      const float* u = gate + r * D;
      for (int i = 0; i < D; ++i) y[i] = x[i] * inv * u[i];
    }
    rrms[r] = inv;
  }
}

void rmsnorm_backward(float* dinp, float* dgate, const float* dout, const float* inp, const float* gate,
                      const float* rrms, int64_t rows, int D) {
#pragma omp parallel for schedule(guided)
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = inp + r * D;
    const float* dy = dout + r * D;
    const float* u = gate == nullptr ? nullptr : gate + r * D;
    const float inv = rrms[r];
    float dot = 0.0f;
    if (u == nullptr) {
      TRIDENT_SIMD_REDUCTION(+, dot)
      for (int i = 0; i < D; ++i) dot += dy[i] * x[i];
    } else {
      TRIDENT_SIMD_REDUCTION(+, dot)
      for (int i = 0; i < D; ++i) dot += dy[i] * u[i] * x[i];
      float* du = dgate + r * D;
      for (int i = 0; i < D; ++i) du[i] += dy[i] * x[i] * inv;
    }
    const float coef = rmsnorm_grad_coef(inv, dot, D);
    float* dx = dinp + r * D;
    if (u == nullptr) {
      for (int i = 0; i < D; ++i) dx[i] += rmsnorm_dinp(dy[i], x[i], inv, coef);
    } else {
      for (int i = 0; i < D; ++i) dx[i] += rmsnorm_dinp(dy[i] * u[i], x[i], inv, coef);
    }
  }
}

}  // namespace trident::cpu
