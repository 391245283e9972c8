#pragma once
// The MLP's bias add and GELU (tanh approximation) in one pass over its (N, OC) pre-activation; kernels/shared/gelu.h
// holds the arithmetic. The fc GEMM writes pre without its bias (beta = 0), so neither the bias broadcast nor a
// separate activation pass touches the wide rows again.
#include <cstdint>

namespace trident::cpu {

// pre (N, OC) += bias (OC), then out (N, OC) = gelu(pre). bias may be nullptr (the activation alone).
void bias_gelu_forward(float* pre, float* out, const float* bias, int64_t N, int OC);

// dpre (N, OC) = dout * gelu'(pre), overwritten; dbias (OC) += column sums of dpre, in the deterministic row-block
// order of row_blocks.h (dbias may be nullptr).
void bias_gelu_backward(float* dpre, float* dbias, const float* pre, const float* dout, int64_t N, int OC);

}  // namespace trident::cpu
