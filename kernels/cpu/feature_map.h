#pragma once
// Linear attention's q/k feature map (kernels/shared/feature_map.h), applied in place to the q and k columns of the
// attention input. qkv (N, 3C) = [q | k | v] per row; qk_pre (N, 2C) = [q | k] before the map, saved for backward.
#include <cstdint>

#include "kernels/shared/feature_map.h"

namespace trident::cpu {

// qk_pre = qkv[:, :2C];  qkv[:, :2C] = map(qk_pre).  v is left alone.
void feature_map_forward(float* qkv, float* qk_pre, int64_t N, int C, FeatureMap map);

// In place: dqkv[:, :2C] (the gradient w.r.t. the mapped q and k) *= map'(qk_pre), becoming the gradient w.r.t.
// the pre-activations. dv is left alone. Unlike most backward ops this does not accumulate: it rescales.
void feature_map_backward(float* dqkv, const float* qk_pre, int64_t N, int C, FeatureMap map);

}  // namespace trident::cpu
