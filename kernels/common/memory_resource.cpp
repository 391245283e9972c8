#include "kernels/common/memory_resource.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "kernels/common/error.h"

namespace trident {

const char* device_name(Device device) { return device == Device::cpu ? "cpu" : "cuda"; }

Device device_named(const std::string& name) {
  TRIDENT_CHECK(name == "cpu" || name == "cuda", "no device named '{}' (cpu, cuda)", name);
  return name == "cpu" ? Device::cpu : Device::cuda;
}

namespace {

class HostMemory final : public MemoryResource {
 public:
  Device device() const override { return Device::cpu; }
  const char* name() const override { return "host"; }
  void* allocate(std::size_t bytes) override {
    constexpr std::size_t kAlignment = 64;  // a cache line; also what AVX-512 loads want
    const std::size_t padded = (std::max<std::size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
    return std::aligned_alloc(kAlignment, padded);
  }
  void release(void* ptr) override { std::free(ptr); }
  void fill(void* ptr, std::size_t bytes, uint8_t value) override { std::memset(ptr, value, bytes); }
};

}  // namespace

MemoryResource& host_memory() {
  static HostMemory memory;
  return memory;
}

}  // namespace trident
