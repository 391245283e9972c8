#include "kernels/cuda/grad_norm.h"

#include <algorithm>

#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/warp.cuh"

namespace trident::cuda {

namespace {

constexpr int64_t kNormItemsPerThread = 16;  // small buffers get few blocks
constexpr int64_t kNormMaxBlocks = 1024;

// Sum over a block of kThreads threads in a fixed order (warps, then the warps' sums); the result is in thread 0.
__device__ double block_sum(double v) {
  __shared__ double warp_sums[kThreads / kWarp];
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  v = warp_sum(v);
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) v = warp_sum(lane < kThreads / kWarp ? warp_sums[lane] : 0.0);
  return v;
}

__global__ void squared_norm_partials_kernel(double* partial, const float* x, int64_t n) {
  double sum = 0.0;
  TRIDENT_GRID_STRIDE_LOOP(i, n) {
    const double v = x[i];
    sum += v * v;
  }
  sum = block_sum(sum);
  if (threadIdx.x == 0) partial[blockIdx.x] = sum;
}

// One block of kThreads.
__global__ void squared_norm_final_kernel(double* total, const double* partial, int blocks) {
  double sum = 0.0;
  for (int b = threadIdx.x; b < blocks; b += kThreads) sum += partial[b];
  sum = block_sum(sum);
  if (threadIdx.x == 0) *total += sum;
}

__global__ void scale_in_place_kernel(float* x, int64_t n, float s) { TRIDENT_GRID_STRIDE_LOOP(i, n) x[i] *= s; }

// Blocks of the partial sums: from n alone, so the result is bit-identical run to run.
int norm_blocks(int64_t n) {
  const int64_t per_block = kThreads * kNormItemsPerThread;
  return static_cast<int>(std::min((n + per_block - 1) / per_block, kNormMaxBlocks));
}

}  // namespace

// ---- launchers ----------------------------------------------------------------------------------------------------

std::size_t squared_norm_scratch_bytes(int64_t n) {
  return n == 0 ? 0 : (1 + static_cast<std::size_t>(norm_blocks(n))) * sizeof(double);
}

void squared_norm_accumulate(double* total, const float* x, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  const int blocks = norm_blocks(n);
  double* partial = nullptr;
  TRIDENT_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&partial), blocks * sizeof(double), stream));
  TRIDENT_LAUNCH(blocks, kThreads, 0, stream, squared_norm_partials_kernel)(partial, x, n);
  TRIDENT_CUDA_CHECK_LAUNCH();
  TRIDENT_LAUNCH(1, kThreads, 0, stream, squared_norm_final_kernel)(total, partial, blocks);
  TRIDENT_CUDA_CHECK_LAUNCH();
  TRIDENT_CUDA_CHECK(cudaFreeAsync(partial, stream));
}

double squared_norm(const float* x, int64_t n, cudaStream_t stream) {
  if (n == 0) return 0.0;
  double* total = nullptr;
  TRIDENT_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&total), sizeof(double), stream));
  TRIDENT_CUDA_CHECK(cudaMemsetAsync(total, 0, sizeof(double), stream));
  squared_norm_accumulate(total, x, n, stream);
  double result = 0.0;
  TRIDENT_CUDA_CHECK(cudaMemcpyAsync(&result, total, sizeof(double), cudaMemcpyDeviceToHost, stream));
  TRIDENT_CUDA_CHECK(cudaFreeAsync(total, stream));
  TRIDENT_CUDA_CHECK(cudaStreamSynchronize(stream));
  return result;
}

void scale(float* x, int64_t n, float s, cudaStream_t stream) {
  if (n == 0) return;
  TRIDENT_LAUNCH(elementwise_blocks(n), kThreads, 0, stream, scale_in_place_kernel)(x, n, s);
  TRIDENT_CUDA_CHECK_LAUNCH();
}

}  // namespace trident::cuda
