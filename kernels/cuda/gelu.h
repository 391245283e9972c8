#pragma once
// GELU (tanh approximation) on the device; kernels/shared/gelu.h holds the arithmetic the CPU backend also runs.
// T is the storage type (float or bf16); the arithmetic is fp32. Every call is asynchronous on `stream`.
#include <cuda_runtime.h>

#include <cstdint>

namespace trident::cuda {

template <class T>
void gelu_forward(T* out, const T* inp, int64_t n, cudaStream_t stream);
// dinp += dout * gelu'(inp)
template <class T>
void gelu_backward(T* dinp, const T* inp, const T* dout, int64_t n, cudaStream_t stream);

}  // namespace trident::cuda
