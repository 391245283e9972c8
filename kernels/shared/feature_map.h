#pragma once
// The q/k feature map of linear attention (model.linear.qk_activation), shared by the CPU and CUDA backends:
//   silu(x) = x * sigmoid(x)             TransNormerLLM's default (its `linear_act_fun`)
//   elu1(x) = 1 + elu(x)                 = x + 1 for x > 0, exp(x) otherwise (Katharopoulos et al.): always > 0
//   none                                 the identity (the op is skipped)
#include "kernels/shared/exp.h"
#include "kernels/shared/hd.h"

namespace trident {

enum class FeatureMap { none, silu, elu1 };

TRIDENT_HD float feature_map(float x, FeatureMap map) {
  switch (map) {
    case FeatureMap::silu: return x / (1.0f + kernel_exp(-x));
    case FeatureMap::elu1: return x > 0.0f ? x + 1.0f : kernel_exp(x);
    default: return x;
  }
}

// d feature_map / dx. silu' = s (1 + x (1 - s)) with s = sigmoid(x); elu1' = 1 for x > 0, exp(x) otherwise.
TRIDENT_HD float feature_map_grad(float x, FeatureMap map) {
  switch (map) {
    case FeatureMap::silu: {
      const float s = 1.0f / (1.0f + kernel_exp(-x));
      return s * (1.0f + x * (1.0f - s));
    }
    case FeatureMap::elu1: return x > 0.0f ? 1.0f : kernel_exp(x);
    default: return 1.0f;
  }
}

}  // namespace trident
