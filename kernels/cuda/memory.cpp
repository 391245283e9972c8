#include "kernels/cuda/memory.h"

#include <cstdint>
#include <cstdio>
#include <cstring>

#include "kernels/cuda/check.h"

namespace trident::cuda {

DeviceMemory::DeviceMemory(int device, cudaStream_t stream) : device_(device), stream_(stream) {
  TRIDENT_CUDA_CHECK(cudaSetDevice(device_));
  cudaMemPool_t pool;
  TRIDENT_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device_));
  uint64_t keep_everything = UINT64_MAX;
  TRIDENT_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_everything));
}

void* DeviceMemory::allocate(std::size_t bytes) {
  void* ptr = nullptr;
  // Pool blocks are at least 256-byte aligned. Zero bytes still get a unique pointer, as on the host.
  const cudaError_t rc = cudaMallocAsync(&ptr, bytes > 0 ? bytes : 1, stream_);
  if (rc == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // not sticky; the Allocator reports it with the budget in the message
    return nullptr;
  }
  TRIDENT_CUDA_CHECK(rc);
  return ptr;
}

// Destructors call these: report a failure, do not throw.
void DeviceMemory::release(void* ptr) {
  if (const cudaError_t rc = cudaFreeAsync(ptr, stream_); rc != cudaSuccess)
    std::fprintf(stderr, "trident: cudaFreeAsync: %s\n", cudaGetErrorString(rc));
}

void DeviceMemory::fill(void* ptr, std::size_t bytes, uint8_t value) {
  TRIDENT_CUDA_CHECK(cudaMemsetAsync(ptr, value, bytes, stream_));
  TRIDENT_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void* PinnedHostMemory::allocate(std::size_t bytes) {
  void* ptr = nullptr;
  const cudaError_t rc = cudaMallocHost(&ptr, bytes > 0 ? bytes : 1);
  if (rc == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    return nullptr;
  }
  TRIDENT_CUDA_CHECK(rc);
  return ptr;
}

void PinnedHostMemory::release(void* ptr) {
  if (const cudaError_t rc = cudaFreeHost(ptr); rc != cudaSuccess)
    std::fprintf(stderr, "trident: cudaFreeHost: %s\n", cudaGetErrorString(rc));
}

void PinnedHostMemory::fill(void* ptr, std::size_t bytes, uint8_t value) { std::memset(ptr, value, bytes); }

}  // namespace trident::cuda
