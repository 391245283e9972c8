#include "kernels/cuda/fill.h"
#include "kernels/cuda/launch.cuh"

namespace trident::cuda {

namespace {

__global__ void fill_kernel(float* x, int64_t n, float value) { TRIDENT_GRID_STRIDE_LOOP(i, n) x[i] = value; }

}  // namespace

void fill(float* x, int64_t n, float value, cudaStream_t stream) {
  if (n == 0) return;
  if (value == 0.0f) {  // all-zero bytes are +0.0f
    TRIDENT_CUDA_CHECK(cudaMemsetAsync(x, 0, sizeof(float) * static_cast<std::size_t>(n), stream));
    return;
  }
  fill_kernel<<<elementwise_blocks(n), kThreads, 0, stream>>>(x, n, value);
  TRIDENT_CUDA_CHECK_LAUNCH();
}

}  // namespace trident::cuda
