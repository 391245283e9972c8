#pragma once
// Fully connected layer, weight in the Hugging Face GPT-2 Conv1D layout (C_in, C_out):
//   out (N, OC) = inp (N, C) @ weight (C, OC) + bias (OC)          bias may be nullptr
#include <cstdint>

namespace trident::cpu {

void linear_forward(float* out, const float* inp, const float* weight, const float* bias, int64_t N, int C, int OC);

// dinp (N, C) += dout @ weight^T;  dweight (C, OC) += inp^T @ dout;  dbias (OC) += column sums of dout.
// dinp and dbias may be nullptr (first layer / no bias).
void linear_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int64_t N, int C, int OC);

}  // namespace trident::cpu
