#pragma once
// RMSNorm row arithmetic shared by the CPU and CUDA backends (no weight: NormAttention's per-head output norm).
#include <cmath>

#include "kernels/shared/hd.h"

namespace trident {

constexpr float kRmsnormEps = 1e-5f;

// rrms = 1 / sqrt(mean(x^2) + eps) from the sum of squares of a row of D values.
TRIDENT_HD float rmsnorm_rrms(float sq_sum, int D) { return 1.0f / std::sqrt(sq_sum / D + kRmsnormEps); }

// The row factor of the backward, rrms^2 * mean(dout * inp), from the row's dot product sum(dout * inp).
TRIDENT_HD float rmsnorm_grad_coef(float rrms, float dot, int D) { return rrms * rrms * dot / D; }

// One element of dinp = rrms * (dout - inp * coef).
TRIDENT_HD float rmsnorm_dinp(float dy, float x, float rrms, float coef) { return rrms * (dy - x * coef); }

}  // namespace trident
