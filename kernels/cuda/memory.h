#pragma once
// CUDA memory for the budgeted Allocator (core/tensor/allocator.h): device memory and pinned host memory.
//
// Device memory comes from the device's default memory pool through cudaMallocAsync/cudaFreeAsync on one stream,
// with the pool's release threshold raised to "keep everything": freed blocks stay in the pool and serve the next
// request of the step without a trip to the driver — a caching allocator that CUDA maintains. The Allocator on top
// enforces device.memory_gb and reports the peak, as on the CPU backend.
//
// Pinned (page-locked) host memory is what makes host-to-device copies asynchronous: ATOM's host store and the
// staging buffers of the copy streams live there.
#include <cuda_runtime.h>

#include "kernels/common/memory_resource.h"

namespace trident::cuda {

class DeviceMemory final : public MemoryResource {
 public:
  // `stream` orders allocations and frees; nullptr is the legacy default stream.
  explicit DeviceMemory(int device, cudaStream_t stream = nullptr);
  Device device() const override { return Device::cuda; }
  const char* name() const override { return "cuda"; }
  void* allocate(std::size_t bytes) override;
  void release(void* ptr) override;
  void fill(void* ptr, std::size_t bytes, uint8_t value) override;  // synchronises the stream

 private:
  int device_;
  cudaStream_t stream_;
};

class PinnedHostMemory final : public MemoryResource {
 public:
  Device device() const override { return Device::cpu; }
  const char* name() const override { return "pinned host"; }
  void* allocate(std::size_t bytes) override;
  void release(void* ptr) override;
  void fill(void* ptr, std::size_t bytes, uint8_t value) override;
};

}  // namespace trident::cuda
