#pragma once
// AdamW (Loshchilov & Hutter): Adam moments with bias correction, weight decay decoupled from the gradient and
// applied to the parameter directly, as torch.optim.AdamW does:
//   p <- p - lr * wd * p;  m <- b1 m + (1-b1) g;  v <- b2 v + (1-b2) g^2;  p <- p - lr * (m/bc1) / (sqrt(v/bc2) + eps)
#include <cmath>

#include "kernels/shared/hd.h"

namespace trident {

struct AdamWStep {
  float lr, beta1, beta2, eps, weight_decay;
  float bias_correction1;  // 1 - beta1^step
  float bias_correction2;  // 1 - beta2^step
};

TRIDENT_HD void adamw_update(float& param, float& m, float& v, float grad, const AdamWStep& s) {
  param -= s.lr * s.weight_decay * param;
  m = s.beta1 * m + (1.0f - s.beta1) * grad;
  v = s.beta2 * v + (1.0f - s.beta2) * grad * grad;
  float m_hat = m / s.bias_correction1;
  float v_hat = v / s.bias_correction2;
  param -= s.lr * m_hat / (std::sqrt(v_hat) + s.eps);
}

// Gradient clipping by global norm: the factor every gradient is multiplied by (1 when within the limit).
TRIDENT_HD float clip_coefficient(float global_norm, float max_norm) {
  if (max_norm <= 0.0f || global_norm <= max_norm) return 1.0f;
  return max_norm / (global_norm + 1e-6f);
}

}  // namespace trident
