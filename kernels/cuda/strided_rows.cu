#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/strided_rows.h"

namespace trident::cuda {

namespace {

__global__ void add_rows_kernel(float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows,
                                int64_t cols) {
  TRIDENT_GRID_STRIDE_LOOP(e, rows * cols) {
    const int64_t i = e / cols, c = e % cols;
    dst[i * ld_dst + c] += src[i * ld_src + c];
  }
}

}  // namespace

void copy_rows(float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows, int64_t cols,
               cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  const std::size_t f = sizeof(float);
  TRIDENT_CUDA_CHECK(cudaMemcpy2DAsync(dst, f * ld_dst, src, f * ld_src, f * cols, rows, cudaMemcpyDeviceToDevice,
                                       stream));
}

void add_rows(float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows, int64_t cols,
              cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  add_rows_kernel<<<elementwise_blocks(rows * cols), kThreads, 0, stream>>>(dst, ld_dst, src, ld_src, rows, cols);
  TRIDENT_CUDA_CHECK_LAUNCH();
}

}  // namespace trident::cuda
