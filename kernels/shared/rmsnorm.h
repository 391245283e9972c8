#pragma once
// RMSNorm row arithmetic shared by the CPU and CUDA backends: no weight, an optional gate (linear attention's
// output norm, TransNormerLLM's "simple RMSNorm" followed by its output gate):
//   out = inp * rrms * gate,  rrms = 1 / sqrt(mean(inp^2) + eps)            (gate = 1 where there is none)
// Backward with g = dout * gate (the gradient reaching the normalised row):
//   dinp = rrms * (g - inp * rrms^2 * mean(g * inp)),  dgate = dout * inp * rrms
#include <cmath>

#include "kernels/shared/hd.h"

namespace trident {

constexpr float kRmsnormEps = 1e-5f;

// rrms = 1 / sqrt(mean(x^2) + eps) from the sum of squares of a row of D values.
TRIDENT_HD float rmsnorm_rrms(float sq_sum, int D) { return 1.0f / std::sqrt(sq_sum / D + kRmsnormEps); }

// The row factor of the backward, rrms^2 * mean(g * inp), from the row's dot product sum(g * inp).
TRIDENT_HD float rmsnorm_grad_coef(float rrms, float dot, int D) { return rrms * rrms * dot / D; }

// One element of dinp = rrms * (g - inp * coef).
TRIDENT_HD float rmsnorm_dinp(float g, float x, float rrms, float coef) { return rrms * (g - x * coef); }

}  // namespace trident
