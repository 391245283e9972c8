#include "kernels/cpu/residual.h"

namespace trident::cpu {

void residual_forward(float* out, const float* a, const float* b, int64_t n) {
#pragma omp parallel for simd schedule(guided)
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void residual_backward(float* da, float* db, const float* dout, int64_t n) {
#pragma omp parallel for simd schedule(guided)
  for (int64_t i = 0; i < n; ++i) {
    da[i] += dout[i];
    db[i] += dout[i];
  }
}

}  // namespace trident::cpu
