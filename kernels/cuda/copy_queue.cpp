#include "kernels/cuda/copy_queue.h"

#include <map>
#include <mutex>

#include "kernels/cuda/check.h"
#include "kernels/cuda/fill.h"
#include "kernels/cuda/streams.h"

namespace trident::cuda {

namespace {

class DeviceCopyQueue final : public CopyQueue {
 public:
  DeviceCopyQueue(int device, cudaStream_t compute) : device_(device), compute_(compute) {}
  ~DeviceCopyQueue() override {
    cudaSetDevice(device_);
    cudaStreamSynchronize(stream_.get());  // no copy may outlive the queue's events and stream
  }

  int64_t mark_compute() override {
    TRIDENT_CUDA_CHECK(cudaSetDevice(device_));
    auto event = std::make_unique<Event>();
    TRIDENT_CUDA_CHECK(cudaEventRecord(event->get(), compute_));
    const std::lock_guard<std::mutex> lock(mutex_);
    marks_.emplace(++last_mark_, std::move(event));
    return last_mark_;
  }
  void after_compute(int64_t mark) override {
    TRIDENT_CUDA_CHECK(cudaSetDevice(device_));
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto it = marks_.find(mark);
    if (it == marks_.end()) return;  // an earlier copy waited for it (or a later mark) already
    stream_.wait(*it->second);
    // Copies run in issue order and marks increase with time: later copies never wait for an earlier mark. The
    // events are destroyed once the stream has taken the wait (CUDA keeps a waited-on event alive until it fires).
    marks_.erase(marks_.begin(), std::next(it));
  }

  void upload(void* dst, const void* host_src, std::size_t bytes) override {
    if (bytes == 0) return;
    TRIDENT_CUDA_CHECK(cudaSetDevice(device_));
    TRIDENT_CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, stream_.get()));
  }
  void download(void* host_dst, const void* src, std::size_t bytes) override {
    if (bytes == 0) return;
    TRIDENT_CUDA_CHECK(cudaSetDevice(device_));
    TRIDENT_CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, stream_.get()));
  }
  void zero(float* dst, int64_t n) override {
    if (n == 0) return;
    TRIDENT_CUDA_CHECK(cudaSetDevice(device_));
    TRIDENT_CUDA_CHECK(cudaMemsetAsync(dst, 0, sizeof(float) * static_cast<std::size_t>(n), stream_.get()));
  }
  void round_to_bf16(bf16* dst, const float* src, int64_t n) override {
    if (n == 0) return;
    TRIDENT_CUDA_CHECK(cudaSetDevice(device_));
    convert(dst, src, n, stream_.get());  // the same rounding as the backend's convert, on the copy stream
  }
  void finish() override {
    TRIDENT_CUDA_CHECK(cudaSetDevice(device_));
    stream_.synchronize();
  }

 private:
  int device_;
  cudaStream_t compute_;
  Stream stream_;
  std::mutex mutex_;  // marks are made on the compute thread and waited for on the copy thread
  std::map<int64_t, std::unique_ptr<Event>> marks_;
  int64_t last_mark_ = 0;
};

}  // namespace

std::unique_ptr<CopyQueue> make_copy_queue(int device, cudaStream_t compute) {
  TRIDENT_CUDA_CHECK(cudaSetDevice(device));
  return std::make_unique<DeviceCopyQueue>(device, compute);
}

}  // namespace trident::cuda
