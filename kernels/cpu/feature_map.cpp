#include "kernels/cpu/feature_map.h"

namespace trident::cpu {

void feature_map_forward(float* qkv, float* qk_pre, int64_t N, int C, FeatureMap map) {
  const int64_t width = 2 * int64_t{C};
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < N; ++t) {
    float* row = qkv + t * 3 * C;
    float* pre = qk_pre + t * width;
#pragma omp simd
    for (int64_t i = 0; i < width; ++i) {
      pre[i] = row[i];
      row[i] = feature_map(row[i], map);
    }
  }
}

void feature_map_backward(float* dqkv, const float* qk_pre, int64_t N, int C, FeatureMap map) {
  const int64_t width = 2 * int64_t{C};
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < N; ++t) {
    float* row = dqkv + t * 3 * C;
    const float* pre = qk_pre + t * width;
#pragma omp simd
    for (int64_t i = 0; i < width; ++i) row[i] *= feature_map_grad(pre[i], map);
  }
}

}  // namespace trident::cpu
