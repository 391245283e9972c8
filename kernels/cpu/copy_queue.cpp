#include "kernels/cpu/copy_queue.h"

#include "kernels/backend.h"

namespace trident::cpu {

namespace {

// The backend's own copies, fill and rounding (serial loops and memcpy: the copy thread opens no OpenMP team).
class HostCopyQueue final : public CopyQueue {
 public:
  int64_t mark_compute() override { return 0; }
  void after_compute(int64_t) override {}
  void upload(void* dst, const void* host_src, std::size_t bytes) override {
    cpu_backend().upload(dst, host_src, bytes);
  }
  void download(void* host_dst, const void* src, std::size_t bytes) override {
    cpu_backend().download(host_dst, src, bytes);
  }
  void zero(float* dst, int64_t n) override { cpu_backend().fill(dst, n, 0.0f); }
  void round_to_bf16(bf16* dst, const float* src, int64_t n) override { cpu_backend().convert(dst, src, n); }
  void finish() override {}
};

}  // namespace

std::unique_ptr<CopyQueue> make_copy_queue() { return std::make_unique<HostCopyQueue>(); }

}  // namespace trident::cpu
