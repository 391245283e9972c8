#pragma once
// Device memory as a budget. Every backend allocates its "device" memory through an Allocator that refuses to
// go past `device.memory_gb`, and tracks the bytes in use and the peak, so maximum sequence lengths, FlexSP's
// memory constraint and ATOM's swapping are real on the CPU backend too. No silent overcommit: a request that
// would exceed the budget fails with the request, the bytes in use and the budget.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include "kernels/common/memory_resource.h"

namespace trident {

struct AllocatorOptions {
  std::string name = "cpu";       // shown in errors: "cpu memory budget exceeded ..."
  std::size_t budget_bytes = 0;   // hard limit on bytes in use
  bool poison_fresh_memory = false;  // fill new allocations with NaN so a read before write fails tests
  MemoryResource* resource = nullptr;  // where the bytes come from; nullptr: host memory
};

class Allocator {
 public:
  explicit Allocator(AllocatorOptions options);
  ~Allocator();
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;

  // 64-byte aligned; zero bytes gives a valid unique pointer. Throws RuntimeError past the budget.
  void* allocate(std::size_t bytes);
  void release(void* ptr);

  std::size_t budget() const { return options_.budget_bytes; }
  std::size_t in_use() const;
  std::size_t peak() const;
  std::size_t live_allocations() const;
  void reset_peak();
  const std::string& name() const { return options_.name; }
  MemoryResource& resource() const { return *resource_; }
  Device device() const { return resource_->device(); }

 private:
  AllocatorOptions options_;
  MemoryResource* resource_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, std::size_t> sizes_;
  std::size_t in_use_ = 0;
  std::size_t peak_ = 0;
};

// "1.50 GiB", "12.0 MiB", "512 B": for error messages and logs.
std::string format_bytes(std::size_t bytes);

// device.memory_gb (GiB, may be fractional) as bytes.
std::size_t gib_to_bytes(double gib);

}  // namespace trident
