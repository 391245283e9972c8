// Device discovery and the error paths of check.h (compiled by the host compiler, so fmt is at hand).
#include "kernels/cuda/device.h"

#include <fmt/format.h>

#include "core/common/error.h"
#include "kernels/cuda/check.h"

namespace trident::cuda {

void throw_cuda_error(cudaError_t rc, const char* call, const char* file, int line) {
  throw RuntimeError(fmt::format("CUDA error at {}:{}: {}: {} ({})", file, line, call, cudaGetErrorString(rc),
                                 cudaGetErrorName(rc)));
}

void throw_cublas_error(cublasStatus_t rc, const char* call, const char* file, int line) {
  throw RuntimeError(fmt::format("cuBLAS error at {}:{}: {}: {}", file, line, call, cublasGetStatusString(rc)));
}

int device_count(std::string* why) {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    cudaGetLastError();  // clear it: asking is not a failure of anything later
    if (why) *why = cudaGetErrorString(rc);
    return 0;
  }
  if (count == 0 && why) *why = "the driver reports no CUDA device";
  return count;
}

std::string device_description(int device) {
  cudaDeviceProp prop{};
  TRIDENT_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  return fmt::format("{}, sm_{}{}, {:.1f} GiB", prop.name, prop.major, prop.minor,
                     static_cast<double>(prop.totalGlobalMem) / (1 << 30));
}

}  // namespace trident::cuda
