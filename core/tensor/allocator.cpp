#include "core/tensor/allocator.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "core/common/error.h"

namespace trident {

namespace {
constexpr std::size_t kAlignment = 64;  // a cache line; also what AVX-512 loads want
}

Allocator::Allocator(AllocatorOptions options) : options_(std::move(options)) {}

Allocator::~Allocator() {
  for (auto& [ptr, bytes] : sizes_) std::free(ptr);
}

void* Allocator::allocate(std::size_t bytes) {
  std::lock_guard lock(mutex_);
  if (bytes > options_.budget_bytes || in_use_ > options_.budget_bytes - bytes) {
    throw_runtime_error(
        "{} memory budget exceeded: requested {}, in use {} in {} allocations, budget {} (device.memory_gb); "
        "raise device.memory_gb or reduce train.batch_tokens / model size",
        options_.name, format_bytes(bytes), format_bytes(in_use_), sizes_.size(),
        format_bytes(options_.budget_bytes));
  }
  std::size_t padded = (std::max<std::size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
  void* ptr = std::aligned_alloc(kAlignment, padded);
  if (ptr == nullptr) {
    throw_runtime_error("{} allocation of {} failed: the host is out of memory (in use {}, budget {})",
                        options_.name, format_bytes(bytes), format_bytes(in_use_),
                        format_bytes(options_.budget_bytes));
  }
  if (options_.poison_fresh_memory) {
    float* f = static_cast<float*>(ptr);
    for (std::size_t i = 0; i < padded / sizeof(float); ++i) f[i] = std::numeric_limits<float>::quiet_NaN();
  }
  sizes_.emplace(ptr, bytes);
  in_use_ += bytes;
  peak_ = std::max(peak_, in_use_);
  return ptr;
}

void Allocator::release(void* ptr) {
  if (ptr == nullptr) return;
  std::lock_guard lock(mutex_);
  auto it = sizes_.find(ptr);
  TRIDENT_CHECK(it != sizes_.end(), "release of a pointer {} not owned by the {} allocator", ptr, options_.name);
  in_use_ -= it->second;
  sizes_.erase(it);
  std::free(ptr);
}

std::size_t Allocator::in_use() const {
  std::lock_guard lock(mutex_);
  return in_use_;
}

std::size_t Allocator::peak() const {
  std::lock_guard lock(mutex_);
  return peak_;
}

std::size_t Allocator::live_allocations() const {
  std::lock_guard lock(mutex_);
  return sizes_.size();
}

void Allocator::reset_peak() {
  std::lock_guard lock(mutex_);
  peak_ = in_use_;
}

std::string format_bytes(std::size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  if (unit == 0) return fmt::format("{} B", bytes);
  return fmt::format("{:.2f} {}", value, units[unit]);
}

std::size_t gib_to_bytes(double gib) {
  return static_cast<std::size_t>(std::llround(gib * 1024.0 * 1024.0 * 1024.0));
}

}  // namespace trident
