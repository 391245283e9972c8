#pragma once
// The MLP's bias add and GELU (tanh approximation) on the device, one pass each way, with the contract of
// kernels/cpu/gelu.h; kernels/shared/gelu.h holds the arithmetic the CPU backend also runs. T is the storage type
// (float or bf16); the arithmetic is fp32. Every call is asynchronous on `stream`.
#include <cuda_runtime.h>

#include <cstdint>

namespace trident::cuda {

// pre (N, OC) += bias (nullptr: none), stored as T; out = gelu(pre as stored).
template <class T>
void bias_gelu_forward(T* pre, T* out, const T* bias, int64_t N, int OC, cudaStream_t stream);
// dpre = dout * gelu'(pre), overwritten; dbias (OC, fp32; nullptr: none) += column sums of dpre in fp32, before
// dpre is rounded to T, in the deterministic order of column_sums.cuh.
template <class T>
void bias_gelu_backward(T* dpre, float* dbias, const T* pre, const T* dout, int64_t N, int OC, cudaStream_t stream);

}  // namespace trident::cuda
