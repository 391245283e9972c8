#pragma once
// RMSNorm without a weight over rows of D, optionally gated (linear attention's output norm; kernels/shared/rmsnorm.h
// has the formulas):
//   out = inp * rrms * gate,  rrms = 1 / sqrt(mean(inp^2) + eps);  inp, gate, out, dinp, dgate, dout (rows, D);
//   rrms (rows) saved. gate nullptr: no gate (then dgate is ignored).
#include <cstdint>

#include "kernels/shared/rmsnorm.h"  // kRmsnormEps and the row arithmetic

namespace trident::cpu {

void rmsnorm_forward(float* out, float* rrms, const float* inp, const float* gate, int64_t rows, int D);

// dinp += rrms * (g - inp * rrms^2 * mean(g * inp)) with g = dout * gate;  dgate += dout * inp * rrms
void rmsnorm_backward(float* dinp, float* dgate, const float* dout, const float* inp, const float* gate,
                      const float* rrms, int64_t rows, int D);

}  // namespace trident::cpu
