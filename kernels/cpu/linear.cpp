#include "kernels/cpu/linear.h"

#include <cstring>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/row_blocks.h"

namespace trident::cpu {

void linear_forward(float* out, const float* inp, const float* weight, const float* bias, int64_t N, int C, int OC) {
  float beta = 0.0f;
  if (bias != nullptr) {  // start from the broadcast bias and let the GEMM accumulate onto it
#pragma omp parallel for schedule(guided)
    for (int64_t t = 0; t < N; ++t) std::memcpy(out + t * OC, bias, sizeof(float) * OC);
    beta = 1.0f;
  }
  gemm(Trans::no, Trans::no, N, OC, C, 1.0f, inp, C, weight, OC, beta, out, OC);
}

void linear_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int64_t N, int C, int OC) {
  if (dinp != nullptr) gemm(Trans::no, Trans::yes, N, C, OC, 1.0f, dout, OC, weight, OC, 1.0f, dinp, C);
  gemm(Trans::yes, Trans::no, C, OC, N, 1.0f, inp, C, dout, OC, 1.0f, dweight, OC);
  if (dbias != nullptr) {
    reduce_rows_deterministic(dbias, N, OC, [&](int64_t t, float* acc) {
      const float* dy = dout + t * OC;
#pragma omp simd
      for (int o = 0; o < OC; ++o) acc[o] += dy[o];
    });
  }
}

}  // namespace trident::cpu
