#pragma once
// Where an Allocator's bytes come from. The Allocator keeps the budget and the accounting; a MemoryResource only
// hands out and takes back raw bytes: host memory (the CPU backend's "device"), CUDA device memory and pinned host
// memory (kernels/cuda/memory.h).
#include <cstddef>
#include <cstdint>
#include <string>

namespace trident {

enum class Device : uint8_t { cpu, cuda };
const char* device_name(Device device);  // "cpu", "cuda"
Device device_named(const std::string& name);  // the inverse, for device.backend values

class MemoryResource {
 public:
  virtual ~MemoryResource() = default;
  virtual Device device() const = 0;  // where a tensor in this memory lives (pinned host memory is cpu)
  virtual const char* name() const = 0;  // "host", "cuda", "pinned host": for error messages
  // At least 64-byte aligned; nullptr when the memory itself is exhausted (the budget is the Allocator's job).
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void release(void* ptr) = 0;
  // Sets `bytes` bytes to `value`, complete on return: zeroing, and NaN poisoning (0xFF bytes are a NaN in f32 and
  // in bf16).
  virtual void fill(void* ptr, std::size_t bytes, uint8_t value) = 0;
};

// Plain host memory (aligned_alloc); the default resource of every Allocator.
MemoryResource& host_memory();

}  // namespace trident
