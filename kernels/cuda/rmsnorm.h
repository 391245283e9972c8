#pragma once
// RMSNorm without a weight over rows of D on the device, optionally gated (linear attention's output norm and
// gate); kernels/shared/rmsnorm.h holds the row arithmetic the CPU backend also runs.
//   out = inp * rrms * gate,  rrms = 1 / sqrt(mean(inp^2) + eps);  inp, gate, out, dinp, dgate, dout (rows, D) in the
//   storage type T (float or bf16);  rrms (rows) fp32, saved for backward. gate nullptr: no gate (dgate is then
//   ignored). Arithmetic is fp32; one warp per row (lanes stride over the row, so any D), warp-shuffle sums.
// Every call is asynchronous on `stream`.
#include <cuda_runtime.h>

#include <cstdint>

namespace trident::cuda {

template <class T>
void rmsnorm_forward(T* out, float* rrms, const T* inp, const T* gate, int64_t rows, int D, cudaStream_t stream);

// dinp += rrms * (g - inp * rrms^2 * mean(g * inp)) with g = dout * gate;  dgate += dout * inp * rrms
template <class T>
void rmsnorm_backward(T* dinp, T* dgate, const T* dout, const T* inp, const T* gate, const float* rrms, int64_t rows,
                      int D, cudaStream_t stream);

}  // namespace trident::cuda
