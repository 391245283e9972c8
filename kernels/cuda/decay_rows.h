#pragma once
// The twin of kernels/cpu/decay_rows.h (same arguments plus the stream): dst (n, D) row i = src row i (row stride
// ld) * exp(-s * (offset + sign * i)). Asynchronous on `stream`.
#include <cuda_runtime.h>

#include <cstdint>

namespace trident::cuda {

void decay_rows(float* dst, const float* src, int64_t ld, int64_t n, int D, float s, int64_t offset, int sign,
                cudaStream_t stream);

}  // namespace trident::cuda
