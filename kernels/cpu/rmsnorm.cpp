#include "kernels/cpu/rmsnorm.h"

#include "kernels/shared/hd.h"
#include "kernels/shared/rmsnorm.h"

namespace trident::cpu {

void rmsnorm_forward(float* out, float* rrms, const float* inp, int64_t rows, int D) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = inp + r * D;
    float sq = 0.0f;
    TRIDENT_SIMD_REDUCTION(+, sq)
    for (int i = 0; i < D; ++i) sq += x[i] * x[i];
    const float inv = rmsnorm_rrms(sq, D);
    for (int i = 0; i < D; ++i) out[r * D + i] = x[i] * inv;
    rrms[r] = inv;
  }
}

void rmsnorm_backward(float* dinp, const float* dout, const float* inp, const float* rrms, int64_t rows, int D) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = inp + r * D;
    const float* dy = dout + r * D;
    float dot = 0.0f;
    TRIDENT_SIMD_REDUCTION(+, dot)
    for (int i = 0; i < D; ++i) dot += dy[i] * x[i];
    const float inv = rrms[r], coef = rmsnorm_grad_coef(inv, dot, D);
    for (int i = 0; i < D; ++i) dinp[r * D + i] += rmsnorm_dinp(dy[i], x[i], inv, coef);
  }
}

}  // namespace trident::cpu
