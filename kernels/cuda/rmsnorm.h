#pragma once
// RMSNorm without a weight over rows of D on the device (NormAttention's per-head output normalisation);
// kernels/shared/rmsnorm.h holds the row arithmetic the CPU backend also runs.
//   out = inp * rrms,  rrms = 1 / sqrt(mean(inp^2) + eps);   inp, out, dinp, dout (rows, D) in the storage type T
//   (float or bf16);  rrms (rows) fp32, saved for backward. Arithmetic is fp32; one warp per row, warp-shuffle sums.
// Every call is asynchronous on `stream`.
#include <cuda_runtime.h>

#include <cstdint>

namespace trident::cuda {

template <class T>
void rmsnorm_forward(T* out, float* rrms, const T* inp, int64_t rows, int D, cudaStream_t stream);

// dinp += rrms * (dout - inp * rrms^2 * mean(dout * inp))
template <class T>
void rmsnorm_backward(T* dinp, const T* dout, const T* inp, const float* rrms, int64_t rows, int D,
                      cudaStream_t stream);

}  // namespace trident::cuda
