#pragma once
// Element-wise writes on the device. Every call is asynchronous on `stream`.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/shared/bf16.h"

namespace trident::cuda {

// x[i] = value over n elements, T float or bf16 (loss weights, zeroed gradients; zeros go through cudaMemsetAsync).
template <class T>
void fill(T* x, int64_t n, float value, cudaStream_t stream);

// dst[i] = src[i] converted: fp32 rounded to bf16 (the bf16 copy of the fp32 master weights), or bf16 widened to
// fp32 (exact).
template <class To, class From>
void convert(To* dst, const From* src, int64_t n, cudaStream_t stream);

}  // namespace trident::cuda
