#pragma once
// Global gradient norm and clipping. The squared norm is accumulated in double over fixed blocks added in order,
// so it is bit-identical whatever the thread count.
#include <cstdint>

namespace trident::cpu {

// sum of x[i]^2, in double.
double squared_norm(const float* x, int64_t n);

// x *= s
void scale(float* x, int64_t n, float s);

}  // namespace trident::cpu
