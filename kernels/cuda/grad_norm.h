#pragma once
// Global gradient norm and clipping on fp32 device buffers. The sum of squares is accumulated in double: each block
// of a grid whose size depends only on n sums a fixed grid-stride subset and reduces it in a fixed shuffle tree;
// then one block adds the block partials in a fixed order. The result is bit-identical run to run (not to the CPU
// kernel, whose blocks differ; both are exact to double rounding).
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace trident::cuda {

// Sum of x[i]^2, in double. Synchronises `stream` to hand the value to the host.
double squared_norm(const float* x, int64_t n, cudaStream_t stream);

// *total += sum of x[i]^2, with total one double in device memory. Asynchronous on `stream`: several buffers add up
// in call order before a single synchronisation.
void squared_norm_accumulate(double* total, const float* x, int64_t n, cudaStream_t stream);

// The bytes of scratch squared_norm takes at once from the device's memory pool (cudaMallocAsync, freed in stream
// order): the sum and the blocks' partials, at most 1,025 doubles whatever n.
std::size_t squared_norm_scratch_bytes(int64_t n);

// x *= s, asynchronous on `stream`.
void scale(float* x, int64_t n, float s, cudaStream_t stream);

}  // namespace trident::cuda
