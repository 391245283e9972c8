#pragma once
// The twin of kernels/cpu/strided_rows.h (same arguments plus the stream), asynchronous on `stream`:
//   copy_rows  dst (rows, cols), row stride ld_dst  =  src (rows, cols), row stride ld_src   (cudaMemcpy2DAsync)
//   add_rows   dst += src, same shapes
#include <cuda_runtime.h>

#include <cstdint>

namespace trident::cuda {

void copy_rows(float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows, int64_t cols,
               cudaStream_t stream);
void add_rows(float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows, int64_t cols,
              cudaStream_t stream);

}  // namespace trident::cuda
