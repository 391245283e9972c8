#pragma once
// GELU (tanh approximation) over n elements; kernels/shared/gelu.h holds the arithmetic.
#include <cstdint>

namespace trident::cpu {

void gelu_forward(float* out, const float* inp, int64_t n);
// dinp += dout * gelu'(inp)
void gelu_backward(float* dinp, const float* inp, const float* dout, int64_t n);

}  // namespace trident::cpu
