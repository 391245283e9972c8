#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/strided_rows.h"
#include "kernels/shared/bf16.h"

namespace trident::cuda {

namespace {

template <class T>
__global__ void add_rows_kernel(T* dst, int64_t ld_dst, const T* src, int64_t ld_src, int64_t rows, int64_t cols) {
  TRIDENT_GRID_STRIDE_LOOP(e, rows * cols) {
    const int64_t i = e / cols, c = e % cols;
    T& d = dst[i * ld_dst + c];
    d = from_float<T>(to_float(d) + to_float(src[i * ld_src + c]));
  }
}

}  // namespace

template <class T>
void copy_rows(T* dst, int64_t ld_dst, const T* src, int64_t ld_src, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  const std::size_t e = sizeof(T);
  TRIDENT_CUDA_CHECK(cudaMemcpy2DAsync(dst, e * ld_dst, src, e * ld_src, e * cols, rows, cudaMemcpyDeviceToDevice,
                                       stream));
}

template <class T>
void add_rows(T* dst, int64_t ld_dst, const T* src, int64_t ld_src, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  TRIDENT_LAUNCH(elementwise_blocks(rows * cols), kThreads, 0, stream, add_rows_kernel<T>)(
      dst, ld_dst, src, ld_src, rows, cols);
  TRIDENT_CUDA_CHECK_LAUNCH();
}

template void copy_rows<float>(float*, int64_t, const float*, int64_t, int64_t, int64_t, cudaStream_t);
template void copy_rows<bf16>(bf16*, int64_t, const bf16*, int64_t, int64_t, int64_t, cudaStream_t);
template void add_rows<float>(float*, int64_t, const float*, int64_t, int64_t, int64_t, cudaStream_t);
template void add_rows<bf16>(bf16*, int64_t, const bf16*, int64_t, int64_t, int64_t, cudaStream_t);

}  // namespace trident::cuda
