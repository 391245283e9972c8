// The SIMT emulation itself (shim/cuda_runtime.h): what the attention kernels rely on behaves as on a GPU.
#include <catch2/catch.hpp>

#include <algorithm>
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

namespace {

__global__ void fill_kernel(float* x, int n, float value) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) x[i] = value;
}

// y = x, element-wise.
__global__ void copy_kernel(float* y, const float* x, int n) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) y[i] = x[i];
}

// Reads a static __shared__ variable no thread of the block wrote.
__global__ void unwritten_static_kernel(float* out, double* out_double) {
  __shared__ float never_written[4];
  __shared__ double never_written_double;
  out[threadIdx.x] = never_written[threadIdx.x];
  if (threadIdx.x == 0) *out_double = never_written_double;
}

// Appends its block index to `order` (blocks run one at a time here, so the counter is race-free).
__global__ void order_kernel(unsigned* order, unsigned* count) {
  if (threadIdx.x == 0) order[(*count)++] = blockIdx.x;
}

}  // namespace

TEST_CASE("SIMT emulation: a non-blocking stream's work waits until something waits for it", "[simt]") {
  const int n = 100;
  float *x = nullptr, *y = nullptr;
  REQUIRE(cudaMalloc(&x, n * sizeof(float)) == cudaSuccess);
  REQUIRE(cudaMalloc(&y, n * sizeof(float)) == cudaSuccess);
  std::fill(x, x + n, 0.0f);
  std::fill(y, y + n, 0.0f);
  cudaStream_t s1 = nullptr, s2 = nullptr;
  cudaEvent_t e = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking) == cudaSuccess);
  REQUIRE(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking) == cudaSuccess);
  REQUIRE(cudaEventCreateWithFlags(&e, cudaEventDisableTiming) == cudaSuccess);

  TRIDENT_LAUNCH(dim3(1), dim3(128), 0, s1, fill_kernel)(x, n, 1.0f);
  CHECK(x[7] == 0.0f);  // queued, not run: the host reads what was there
  cudaStreamSynchronize(s1);
  CHECK(x[7] == 1.0f);

  // s2 reads x after an event on s1: the event's work runs first, then the copy.
  TRIDENT_LAUNCH(dim3(1), dim3(128), 0, s1, fill_kernel)(x, n, 2.0f);
  cudaEventRecord(e, s1);
  cudaStreamWaitEvent(s2, e, 0);
  TRIDENT_LAUNCH(dim3(1), dim3(128), 0, s2, copy_kernel)(y, x, n);
  CHECK(y[7] == 0.0f);
  cudaStreamSynchronize(s2);
  CHECK(y[7] == 2.0f);

  // Without the wait, s2 reads x before s1's kernel has written it: the race a GPU can show.
  TRIDENT_LAUNCH(dim3(1), dim3(128), 0, s1, fill_kernel)(x, n, 3.0f);
  TRIDENT_LAUNCH(dim3(1), dim3(128), 0, s2, copy_kernel)(y, x, n);
  cudaStreamSynchronize(s2);
  CHECK(y[7] == 2.0f);
  cudaEventRecord(e, s1);
  CHECK(cudaEventQuery(e) == cudaSuccess);  // querying waits for it
  CHECK(x[7] == 3.0f);

  // A copy from pageable memory is synchronous; one from page-locked memory waits in the queue.
  std::vector<float> pageable(n, 4.0f);
  cudaMemcpyAsync(x, pageable.data(), n * sizeof(float), cudaMemcpyHostToDevice, s1);
  CHECK(x[7] == 4.0f);
  float* pinned = nullptr;
  REQUIRE(cudaMallocHost(reinterpret_cast<void**>(&pinned), n * sizeof(float)) == cudaSuccess);
  std::fill(pinned, pinned + n, 5.0f);
  cudaMemcpyAsync(x, pinned, n * sizeof(float), cudaMemcpyHostToDevice, s1);
  CHECK(x[7] == 4.0f);
  cudaDeviceSynchronize();
  CHECK(x[7] == 5.0f);
  cudaPointerAttributes attributes{};
  cudaPointerGetAttributes(&attributes, x + 3);
  CHECK(attributes.type == cudaMemoryTypeDevice);
  cudaPointerGetAttributes(&attributes, pinned + 3);
  CHECK(attributes.type == cudaMemoryTypeHost);
  cudaPointerGetAttributes(&attributes, pageable.data());
  CHECK(attributes.type == cudaMemoryTypeUnregistered);

  cudaFreeHost(pinned);
  cudaEventDestroy(e);
  cudaStreamDestroy(s1);
  cudaStreamDestroy(s2);
  cudaFree(x);
  cudaFree(y);
}

TEST_CASE("SIMT emulation: static shared memory is poisoned and blocks run in a shuffled order", "[simt]") {
  std::vector<float> out(4, 0.0f);
  double out_double = 0;
  TRIDENT_LAUNCH(dim3(1), dim3(4), 0, nullptr, unwritten_static_kernel)(out.data(), &out_double);
  for (float v : out) CHECK(std::isnan(v));
  CHECK(std::isnan(out_double));

  const unsigned blocks = 64;
  std::vector<unsigned> order(blocks);
  unsigned count = 0;
  TRIDENT_LAUNCH(dim3(blocks), dim3(32), 0, nullptr, order_kernel)(order.data(), &count);
  REQUIRE(count == blocks);
  std::vector<unsigned> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (unsigned b = 0; b < blocks; ++b) CHECK(sorted[b] == b);  // every block ran once
  CHECK_FALSE(std::is_sorted(order.begin(), order.end()));      // but not in index order
}
