#include "core/tensor/allocator.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "kernels/common/error.h"

namespace trident {

Allocator::Allocator(AllocatorOptions options)
    : options_(std::move(options)), resource_(options_.resource ? options_.resource : &host_memory()) {}

Allocator::~Allocator() {
  for (auto& [ptr, bytes] : sizes_) resource_->release(ptr);
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
  void* ptr = resource_->allocate(bytes);
  if (ptr == nullptr) {
    throw_runtime_error("{} allocation of {} failed: {} memory is exhausted (in use {}, budget {})", options_.name,
                        format_bytes(bytes), resource_->name(), format_bytes(in_use_),
                        format_bytes(options_.budget_bytes));
  }
  if (options_.poison_fresh_memory) resource_->fill(ptr, bytes, 0xFF);  // all-ones bytes: NaN in f32 and bf16
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
  resource_->release(ptr);
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
