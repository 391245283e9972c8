#pragma once
// GELU, tanh approximation (GPT-2): gelu(x) = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3).
// Computed through the identity 0.5 (1 + tanh(u)) = sigmoid(2u), which needs one exp (kernel_exp vectorises) and
// no tanh: gelu(x) = x * s with s = 1 / (1 + exp(-2u)); for very negative x, exp overflows to inf and s is 0.
#include "kernels/shared/exp.h"
#include "kernels/shared/hd.h"

namespace trident {

constexpr float kGeluK = 0.7978845608028654f;  // sqrt(2/pi)
constexpr float kGeluC = 0.044715f;

TRIDENT_HD float gelu(float x) {
  float u = kGeluK * (x + kGeluC * x * x * x);
  return x / (1.0f + kernel_exp(-2.0f * u));
}

// d gelu / dx = s + x s (1 - s) 2 u'
TRIDENT_HD float gelu_grad(float x) {
  float u = kGeluK * (x + kGeluC * x * x * x);
  float s = 1.0f / (1.0f + kernel_exp(-2.0f * u));
  float du = kGeluK * (1.0f + 3.0f * kGeluC * x * x);
  return s + 2.0f * x * s * (1.0f - s) * du;
}

}  // namespace trident
