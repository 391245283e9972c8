#pragma once
// A device copy of a host vector for CUDA tests: uploaded on construction, downloaded with to_host(), freed on
// destruction. Always a valid device pointer, also for an empty vector.
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "kernels/common/error.h"

namespace trident::test {

inline void cuda_or_throw(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess) throw RuntimeError(std::string(what) + ": " + cudaGetErrorString(rc));
}

template <class T>
class DeviceVector {
 public:
  explicit DeviceVector(const std::vector<T>& host) : size_(host.size()) {
    cuda_or_throw(cudaMalloc(reinterpret_cast<void**>(&data_), bytes() + 1), "cudaMalloc");
    cuda_or_throw(cudaMemcpy(data_, host.data(), bytes(), cudaMemcpyHostToDevice), "cudaMemcpy to device");
    // From pageable memory cudaMemcpy may return before the data has landed, and the code under test may run on a
    // non-blocking stream that does not wait for the legacy one: finish the copy here.
    cuda_or_throw(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }
  explicit DeviceVector(std::size_t n, T value = T{}) : DeviceVector(std::vector<T>(n, value)) {}
  DeviceVector(const DeviceVector&) = delete;
  DeviceVector& operator=(const DeviceVector&) = delete;
  ~DeviceVector() { cudaFree(data_); }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return size_; }
  // Waits for all work on the device, then copies back.
  std::vector<T> to_host() const {
    std::vector<T> host(size_);
    cuda_or_throw(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    cuda_or_throw(cudaMemcpy(host.data(), data_, bytes(), cudaMemcpyDeviceToHost), "cudaMemcpy to host");
    return host;
  }

 private:
  std::size_t bytes() const { return size_ * sizeof(T); }
  T* data_ = nullptr;
  std::size_t size_;
};

}  // namespace trident::test
