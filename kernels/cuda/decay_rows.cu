#include "kernels/cuda/decay_rows.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/shared/decay.h"

namespace trident::cuda {

namespace {

__global__ void decay_rows_kernel(float* dst, const float* src, int64_t ld, int64_t n, int D, float s,
                                  int64_t offset, int sign) {
  TRIDENT_GRID_STRIDE_LOOP(e, n * D) {
    const int64_t i = e / D, d = e % D;
    dst[e] = row_decay(s, offset, sign, i) * src[i * ld + d];
  }
}

}  // namespace

void decay_rows(float* dst, const float* src, int64_t ld, int64_t n, int D, float s, int64_t offset, int sign,
                cudaStream_t stream) {
  if (n == 0 || D == 0) return;
  TRIDENT_LAUNCH(elementwise_blocks(n * D), kThreads, 0, stream, decay_rows_kernel)(
      dst, src, ld, n, D, s, offset, sign);
  TRIDENT_CUDA_CHECK_LAUNCH();
}

}  // namespace trident::cuda
