#include "kernels/cpu/embedding.h"

#include <algorithm>

namespace trident::cpu {

void embedding_forward(float* out, const int32_t* tokens, const int32_t* positions, const float* wte,
                       const float* wpe, int64_t N, int C) {
#pragma omp parallel for schedule(guided)
  for (int64_t t = 0; t < N; ++t) {
    const float* w = wte + static_cast<int64_t>(tokens[t]) * C;
    float* y = out + t * C;
    if (wpe == nullptr) {
      std::copy(w, w + C, y);
      continue;
    }
    const float* p = wpe + static_cast<int64_t>(positions[t]) * C;
#pragma omp simd
    for (int i = 0; i < C; ++i) y[i] = w[i] + p[i];
  }
}

void embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, const int32_t* positions,
                        int64_t N, int C) {
  constexpr int kSlice = 64;  // channels per work item: one cache line-aligned strip of 16 floats x 4
  const int slices = (C + kSlice - 1) / kSlice;
#pragma omp parallel for schedule(guided)
  for (int s = 0; s < slices; ++s) {
    const int c0 = s * kSlice, c1 = std::min(C, c0 + kSlice);
    for (int64_t t = 0; t < N; ++t) {
      const float* dy = dout + t * C;
      float* dw = dwte + static_cast<int64_t>(tokens[t]) * C;
      for (int i = c0; i < c1; ++i) dw[i] += dy[i];
      if (dwpe != nullptr) {
        float* dp = dwpe + static_cast<int64_t>(positions[t]) * C;
        for (int i = c0; i < c1; ++i) dp[i] += dy[i];
      }
    }
  }
}

}  // namespace trident::cpu
