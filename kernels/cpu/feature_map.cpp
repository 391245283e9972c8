#include "kernels/cpu/feature_map.h"

namespace trident::cpu {

namespace {

// The map is a template argument so that the switch inside feature_map() folds away and the inner loops vectorise.
template <FeatureMap Map>
void forward_rows(float* qkv, float* qk_pre, int64_t N, int C) {
  const int64_t width = 2 * int64_t{C};
#pragma omp parallel for schedule(guided)
  for (int64_t t = 0; t < N; ++t) {
    float* row = qkv + t * 3 * C;
    float* pre = qk_pre + t * width;
#pragma omp simd
    for (int64_t i = 0; i < width; ++i) {
      pre[i] = row[i];
      row[i] = feature_map(row[i], Map);
    }
  }
}

template <FeatureMap Map>
void backward_rows(float* dqkv, const float* qk_pre, int64_t N, int C) {
  const int64_t width = 2 * int64_t{C};
#pragma omp parallel for schedule(guided)
  for (int64_t t = 0; t < N; ++t) {
    float* row = dqkv + t * 3 * C;
    const float* pre = qk_pre + t * width;
#pragma omp simd
    for (int64_t i = 0; i < width; ++i) row[i] *= feature_map_grad(pre[i], Map);
  }
}

}  // namespace

void feature_map_forward(float* qkv, float* qk_pre, int64_t N, int C, FeatureMap map) {
  switch (map) {
    case FeatureMap::silu: return forward_rows<FeatureMap::silu>(qkv, qk_pre, N, C);
    case FeatureMap::elu1: return forward_rows<FeatureMap::elu1>(qkv, qk_pre, N, C);
    case FeatureMap::none: return forward_rows<FeatureMap::none>(qkv, qk_pre, N, C);
  }
}

void feature_map_backward(float* dqkv, const float* qk_pre, int64_t N, int C, FeatureMap map) {
  switch (map) {
    case FeatureMap::silu: return backward_rows<FeatureMap::silu>(dqkv, qk_pre, N, C);
    case FeatureMap::elu1: return backward_rows<FeatureMap::elu1>(dqkv, qk_pre, N, C);
    case FeatureMap::none: return backward_rows<FeatureMap::none>(dqkv, qk_pre, N, C);
  }
}

}  // namespace trident::cpu
