#include "kernels/cpu/gelu.h"

#include "kernels/cpu/row_blocks.h"
#include "kernels/shared/gelu.h"

namespace trident::cpu {

void bias_gelu_forward(float* pre, float* out, const float* bias, int64_t N, int OC) {
#pragma omp parallel for schedule(guided)
  for (int64_t t = 0; t < N; ++t) {
    float* p = pre + t * OC;
    float* y = out + t * OC;
#pragma omp simd
    for (int o = 0; o < OC; ++o) {
      const float x = bias != nullptr ? p[o] + bias[o] : p[o];
      p[o] = x;
      y[o] = gelu(x);
    }
  }
}

namespace {
void gelu_grad_row(float* dpre, const float* pre, const float* dout, int OC) {
#pragma omp simd
  for (int o = 0; o < OC; ++o) dpre[o] = dout[o] * gelu_grad(pre[o]);
}
}  // namespace

void bias_gelu_backward(float* dpre, float* dbias, const float* pre, const float* dout, int64_t N, int OC) {
  if (dbias == nullptr) {
#pragma omp parallel for schedule(guided)
    for (int64_t t = 0; t < N; ++t) gelu_grad_row(dpre + t * OC, pre + t * OC, dout + t * OC, OC);
    return;
  }
  reduce_rows_deterministic(dbias, N, OC, [&](int64_t t, float* acc) {  // each row once: dpre, then its sum
    float* d = dpre + t * OC;
    gelu_grad_row(d, pre + t * OC, dout + t * OC, OC);
#pragma omp simd
    for (int o = 0; o < OC; ++o) acc[o] += d[o];
  });
}

}  // namespace trident::cpu
