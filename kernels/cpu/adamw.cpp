#include "kernels/cpu/adamw.h"

#include <cmath>

namespace trident::cpu {

AdamWStep adamw_step(const AdamWHyper& h, int64_t step) {
  return {h.lr,
          h.beta1,
          h.beta2,
          h.eps,
          h.weight_decay,
          static_cast<float>(1.0 - std::pow(static_cast<double>(h.beta1), static_cast<double>(step))),
          static_cast<float>(1.0 - std::pow(static_cast<double>(h.beta2), static_cast<double>(step)))};
}

void adamw_update(float* params, const float* grads, float* m, float* v, int64_t n, const AdamWStep& step,
                  float grad_scale) {
#pragma omp parallel for simd schedule(guided)
  for (int64_t i = 0; i < n; ++i) adamw_update(params[i], m[i], v[i], grads[i] * grad_scale, step);
}

}  // namespace trident::cpu
