#pragma once
// Rows scaled by a decay (linear-attention sequence parallelism folds a neighbour's state into a rank's first or
// last document piece with it, parallel/lasp/local.cpp):
//   dst (n, D) row i = src row i (row stride ld) * exp(-s * (offset + sign * i)),   sign = +1 or -1,
// the exponent kept >= 0 by the caller (kernels/shared/decay.h row_decay).
#include <cstdint>

namespace trident::cpu {

void decay_rows(float* dst, const float* src, int64_t ld, int64_t n, int D, float s, int64_t offset, int sign);

}  // namespace trident::cpu
