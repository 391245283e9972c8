#pragma once
// The twin of kernels/cpu/strided_rows.h (same arguments plus the stream), asynchronous on `stream`; T is float or
// bf16:
//   copy_rows  dst (rows, cols), row stride ld_dst  =  src (rows, cols), row stride ld_src   (cudaMemcpy2DAsync)
//   add_rows   dst += src, same shapes (bf16: the sum in fp32, rounded once)
#include <cuda_runtime.h>

#include <cstdint>

namespace trident::cuda {

template <class T>
void copy_rows(T* dst, int64_t ld_dst, const T* src, int64_t ld_src, int64_t rows, int64_t cols, cudaStream_t stream);
template <class T>
void add_rows(T* dst, int64_t ld_dst, const T* src, int64_t ld_src, int64_t rows, int64_t cols, cudaStream_t stream);

}  // namespace trident::cuda
