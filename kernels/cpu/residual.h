#pragma once
// Residual connection: out = a + b over n elements; backward passes dout to both branches.
#include <cstdint>

namespace trident::cpu {

void residual_forward(float* out, const float* a, const float* b, int64_t n);
// da += dout; db += dout
void residual_backward(float* da, float* db, const float* dout, int64_t n);

}  // namespace trident::cpu
