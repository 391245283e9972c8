// Device discovery and the error paths of check.h (compiled by the host compiler, so fmt is at hand).
#include "kernels/cuda/device.h"

#include <fmt/format.h>

#include "kernels/common/error.h"
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

double dense_peak_flops(int device, bool bf16, std::string* how) {
  int major = 0, minor = 0, sms = 0, clock_khz = 0;
  TRIDENT_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  TRIDENT_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  TRIDENT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  TRIDENT_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));
  const bool a100 = major == 8 && minor == 0, h100 = major == 9 && minor == 0;
  const int per_clock = a100 ? (bf16 ? 2048 : 128) : h100 ? (bf16 ? 4096 : 256) : 0;
  const char* what = bf16 ? "dense bf16" : "fp32";
  if (per_clock == 0) {
    *how = fmt::format("{} peak unknown for sm_{}{} (FLOP/clk/SM known for sm_80, sm_90)", what, major, minor);
    return 0;
  }
  *how = fmt::format("{} peak, sm_{}{}: {} FLOP/clk/SM x {} SMs x {:.3f} GHz", what, major, minor, per_clock, sms,
                     clock_khz * 1e-6);
  return double(per_clock) * sms * clock_khz * 1e3;
}

}  // namespace trident::cuda
