#include "kernels/cpu/copy_queue.h"

#include <algorithm>
#include <cstring>

namespace trident::cpu {

namespace {

class HostCopyQueue final : public CopyQueue {
 public:
  int64_t mark_compute() override { return 0; }
  void after_compute(int64_t) override {}
  // memcpy's pointers must not be null even for 0 bytes, and an empty range's may be.
  void upload(void* dst, const void* host_src, std::size_t bytes) override {
    if (bytes > 0) std::memcpy(dst, host_src, bytes);
  }
  void download(void* host_dst, const void* src, std::size_t bytes) override {
    if (bytes > 0) std::memcpy(host_dst, src, bytes);
  }
  void zero(float* dst, int64_t n) override { std::fill(dst, dst + n, 0.0f); }
  void round_to_bf16(bf16* dst, const float* src, int64_t n) override {
    for (int64_t i = 0; i < n; ++i) dst[i] = float_to_bf16(src[i]);
  }
  void finish() override {}
};

}  // namespace

std::unique_ptr<CopyQueue> make_copy_queue() { return std::make_unique<HostCopyQueue>(); }

}  // namespace trident::cpu
