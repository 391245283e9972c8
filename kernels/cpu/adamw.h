#pragma once
// Fused AdamW over a flat range of parameters (one call per parameter group: decay or no decay).
//   params, grads, m, v (n) fp32. grad_scale multiplies each gradient first (the clipping coefficient).
#include <cstdint>

#include "kernels/shared/adamw.h"

namespace trident::cpu {

struct AdamWHyper {
  float lr, beta1, beta2, eps, weight_decay;
};

// step counts from 1 (bias correction 1 - beta^step).
AdamWStep adamw_step(const AdamWHyper& hyper, int64_t step);

void adamw_update(float* params, const float* grads, float* m, float* v, int64_t n, const AdamWStep& step,
                  float grad_scale);

}  // namespace trident::cpu
