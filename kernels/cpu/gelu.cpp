#include "kernels/cpu/gelu.h"

#include "kernels/shared/gelu.h"

namespace trident::cpu {

void gelu_forward(float* out, const float* inp, int64_t n) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) out[i] = gelu(inp[i]);
}

void gelu_backward(float* dinp, const float* inp, const float* dout, int64_t n) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) dinp[i] += dout[i] * gelu_grad(inp[i]);
}

}  // namespace trident::cpu
