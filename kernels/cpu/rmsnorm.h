#pragma once
// RMSNorm without a weight over rows of D (NormAttention's per-head output normalisation):
//   out = inp * rrms,  rrms = 1 / sqrt(mean(inp^2) + eps);   inp, out, dinp, dout (rows, D);  rrms (rows) saved.
#include <cstdint>

#include "kernels/shared/rmsnorm.h"  // kRmsnormEps and the row arithmetic

namespace trident::cpu {

void rmsnorm_forward(float* out, float* rrms, const float* inp, int64_t rows, int D);

// dinp += rrms * (dout - inp * rrms^2 * mean(dout * inp))
void rmsnorm_backward(float* dinp, const float* dout, const float* inp, const float* rrms, int64_t rows, int D);

}  // namespace trident::cpu
