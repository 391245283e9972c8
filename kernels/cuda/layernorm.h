#pragma once
// LayerNorm over the last dimension on the device; kernels/shared/layernorm.h holds the row arithmetic the CPU
// backend also runs.
//   inp, out, dinp, dout (N, C) in the storage type T (float or bf16);  weight, bias, dweight, dbias (C) fp32
//   (parameters and their gradients stay fp32);  mean, rstd (N) fp32, saved for backward. Arithmetic is fp32.
// Every call is asynchronous on `stream`.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace trident::cuda {

// One warp per row: two-pass statistics (mean, then centred variance) with warp-shuffle sums.
template <class T>
void layernorm_forward(T* out, float* mean, float* rstd, const T* inp, const float* weight, const float* bias,
                       int64_t N, int C, cudaStream_t stream);

// Accumulates into dinp, dweight, dbias. dinp: one warp per row. dweight/dbias are bit-identical run to run: each
// block sums a fixed range of rows for 32 columns into an fp32 scratch, then one thread per column adds the blocks'
// partials in block order. The scratch (layernorm_backward_scratch_bytes) is taken from the device's memory pool with
// cudaMallocAsync and returned with cudaFreeAsync, both ordered on `stream`.
template <class T>
void layernorm_backward(T* dinp, float* dweight, float* dbias, const T* dout, const T* inp, const float* weight,
                        const float* mean, const float* rstd, int64_t N, int C, cudaStream_t stream);

// The bytes of scratch layernorm_backward takes for N rows of C: at most 2 * 1024 * C floats, whatever N.
std::size_t layernorm_backward_scratch_bytes(int64_t N, int C);

}  // namespace trident::cuda
