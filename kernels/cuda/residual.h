#pragma once
// Residual connection on the device: out = a + b over n elements; backward passes dout to both branches.
// T is the storage type (float or bf16); the arithmetic is fp32. Every call is asynchronous on `stream`.
// In-place use (out == a or out == b) is fine: each element is read and written by one thread.
#include <cuda_runtime.h>

#include <cstdint>

namespace trident::cuda {

template <class T>
void residual_forward(T* out, const T* a, const T* b, int64_t n, cudaStream_t stream);
// da += dout; db += dout
template <class T>
void residual_backward(T* da, T* db, const T* dout, int64_t n, cudaStream_t stream);

}  // namespace trident::cuda
