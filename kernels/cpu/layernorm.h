#pragma once
// LayerNorm over the last dimension.
//   inp, out, dinp, dout (N, C);  weight, bias, dweight, dbias (C);  mean, rstd (N) saved for backward.
#include <cstdint>

namespace trident::cpu {

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                       int64_t N, int C);

// Accumulates into dinp, dweight, dbias. The parameter gradients are reduced over fixed blocks of rows in a fixed
// order, so they are bit-identical whatever the thread count.
void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int64_t N, int C);

}  // namespace trident::cpu
