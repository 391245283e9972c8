// The SIMT emulation itself (shim/cuda_runtime.h): what the attention kernels rely on behaves as on a GPU.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include <cuda_runtime.h>

#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/warp.cuh"

namespace {

// Each warp sums and maxes its lanes' values by butterfly shuffles; every lane must end with the same result.
__global__ void warp_reduce_kernel(float* sums, float* maxes, const float* x) {
  const float v = x[blockIdx.x * blockDim.x + threadIdx.x];
  const unsigned out = (blockIdx.x * blockDim.x + threadIdx.x);
  sums[out] = trident::cuda::warp_sum(v);
  maxes[out] = trident::cuda::warp_max(v);
}

// Thread t writes shared[t], and after the barrier reads its neighbour's: correct only if every thread waits.
__global__ void neighbour_kernel(float* out) {
  TRIDENT_DYNAMIC_SHARED(float, shared);
  shared[threadIdx.x] = float(blockIdx.x * 1000 + threadIdx.x);
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = shared[(threadIdx.x + 1) % blockDim.x];
}

// A 2-D block: thread (x, y) is linear thread x + blockDim.x * y.
__global__ void index_kernel(unsigned* out) {
  out[threadIdx.x + blockDim.x * threadIdx.y] = threadIdx.y * 100 + threadIdx.x;
}

// Reads shared memory nobody wrote.
__global__ void unwritten_kernel(float* out) {
  TRIDENT_DYNAMIC_SHARED(float, shared);
  out[threadIdx.x] = shared[threadIdx.x];
}

}  // namespace

TEST_CASE("SIMT emulation: shuffles, block barriers and poisoned shared memory", "[simt]") {
  const unsigned blocks = 3, threads = 96;  // three warps a block
  std::vector<float> x(blocks * threads), sums(x.size()), maxes(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float((i * 37) % 101) - 50.0f;
  TRIDENT_LAUNCH(dim3(blocks), dim3(threads), 0, nullptr, warp_reduce_kernel)(sums.data(), maxes.data(), x.data());
  for (std::size_t w = 0; w < x.size() / 32; ++w) {
    float sum = 0, max = -INFINITY;
    for (std::size_t i = 32 * w; i < 32 * w + 32; ++i) {
      sum += x[i];
      max = std::max(max, x[i]);
    }
    for (std::size_t i = 32 * w; i < 32 * w + 32; ++i) {
      CHECK(sums[i] == sum);  // small integers: exact in any order
      CHECK(maxes[i] == max);
    }
  }

  std::vector<float> out(blocks * threads);
  TRIDENT_LAUNCH(dim3(blocks), dim3(threads), threads * sizeof(float), nullptr, neighbour_kernel)(out.data());
  for (unsigned b = 0; b < blocks; ++b)
    for (unsigned t = 0; t < threads; ++t) CHECK(out[b * threads + t] == float(b * 1000 + (t + 1) % threads));

  TRIDENT_LAUNCH(dim3(1), dim3(32), 32 * sizeof(float), nullptr, unwritten_kernel)(out.data());
  for (unsigned t = 0; t < 32; ++t) CHECK(std::isnan(out[t]));

  std::vector<unsigned> index(8 * 5);
  TRIDENT_LAUNCH(dim3(1), dim3(8, 5), 0, nullptr, index_kernel)(index.data());
  for (unsigned y = 0; y < 5; ++y)
    for (unsigned i = 0; i < 8; ++i) CHECK(index[i + 8 * y] == y * 100 + i);
}
