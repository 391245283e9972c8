// Device discovery and the error paths of check.h (compiled by the host compiler, so fmt is at hand).
#include "kernels/cuda/device.h"

#include <algorithm>
#include <cmath>

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

namespace {

struct MemoryInfo {
  std::size_t free = 0, total = 0;
};

// cudaMemGetInfo of `device`, the calling thread's device left as it was. `trim_pool` first hands back what the
// device's pool kept from earlier work (it waits for the device).
MemoryInfo memory_info(int device, bool trim_pool) {
  int current = 0;
  TRIDENT_CUDA_CHECK(cudaGetDevice(&current));
  TRIDENT_CUDA_CHECK(cudaSetDevice(device));
  cudaError_t rc = cudaSuccess;
  if (trim_pool) {
    cudaMemPool_t pool;
    rc = cudaDeviceSynchronize();
    if (rc == cudaSuccess) rc = cudaDeviceGetDefaultMemPool(&pool, device);
    if (rc == cudaSuccess) rc = cudaMemPoolTrimTo(pool, 0);
  }
  MemoryInfo info;
  if (rc == cudaSuccess) rc = cudaMemGetInfo(&info.free, &info.total);
  cudaSetDevice(current);
  TRIDENT_CUDA_CHECK(rc);
  return info;
}

}  // namespace

int64_t device_memory_in_use(int device) {
  const MemoryInfo info = memory_info(device, false);
  return static_cast<int64_t>(info.total - info.free);
}

std::string memory_shortfall(int device, double memory_gb, std::size_t budget_bytes, std::size_t scratch_bytes,
                             int ranks) {
  // What the pool kept from start-up work (a profile measured on the device) is free for the run: hand it back first.
  const std::size_t free = memory_info(device, true).free;
  const std::size_t share = free / static_cast<std::size_t>(std::max(ranks, 1));
  if (budget_bytes <= share && scratch_bytes <= share - budget_bytes) return "";
  constexpr double kGiB = 1 << 30;
  const double largest = share > scratch_bytes ? static_cast<double>(share - scratch_bytes) / kGiB : 0.0;
  return fmt::format(
      "device.memory_gb = {} does not fit GPU {} ({}): {:.2f} GiB is free once the CUDA context, the cuBLAS "
      "workspace and NCCL's communicators are in place, and each of the {} rank(s) on it needs its budget plus up to "
      "{:.3f} GiB of launch scratch; {}",
      memory_gb, device, device_description(device), static_cast<double>(free) / kGiB, ranks,
      static_cast<double>(scratch_bytes) / kGiB,
      largest >= 0.01 ? fmt::format("set device.memory_gb to at most {:.2f}", std::floor(largest * 100) / 100)
                      : std::string("no budget fits: start fewer ranks on it, or lower train.batch_tokens"));
}

std::string device_description(int device) {
  cudaDeviceProp prop{};
  TRIDENT_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  return fmt::format("{}, sm_{}{}, {:.1f} GiB", prop.name, prop.major, prop.minor,
                     static_cast<double>(prop.totalGlobalMem) / (1 << 30));
}

namespace {

// NVIDIA's datasheet peaks (dense, TFLOP/s) of the cards Trident is sized for, matched by a part of the device name
// and the SM count (first match wins: the PCIe and NVL H100s before the SXM). The bf16 tensor-core figure is quoted
// at a sustained clock below the maximum the device reports (1.83 against 1.98 GHz on an H100 SXM), so the clock
// formula alone would overstate it by about 8%.
struct Datasheet {
  const char* name_part;
  int sms;
  double bf16_tflops, fp32_tflops;
  const char* card;
};
constexpr Datasheet kDatasheets[] = {
    {"H100 NVL", 132, 835.5, 60.0, "H100 NVL"},     {"H100 PCIe", 114, 756.5, 51.2, "H100 PCIe"},
    {"H100", 132, 989.5, 66.9, "H100 SXM"},         {"H200", 132, 989.5, 66.9, "H200"},
    {"A100", 108, 312.0, 19.5, "A100"},
};

}  // namespace

double dense_peak_flops(int device, bool bf16, std::string* how) {
  cudaDeviceProp prop{};
  TRIDENT_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  const char* what = bf16 ? "dense bf16" : "fp32";
  const std::string name = prop.name;
  for (const Datasheet& d : kDatasheets) {
    if (name.find(d.name_part) == std::string::npos || prop.multiProcessorCount != d.sms) continue;
    const double tflops = bf16 ? d.bf16_tflops : d.fp32_tflops;
    *how = fmt::format("{} peak of the {} datasheet: {} TFLOP/s", what, d.card, tflops);
    return tflops * 1e12;
  }
  // Not in the table: FLOP per clock per SM by architecture x SMs x the device's maximum clock.
  int clock_khz = 0;
  TRIDENT_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));
  const int major = prop.major, minor = prop.minor, sms = prop.multiProcessorCount;
  const bool sm80 = major == 8 && minor == 0, sm90 = major == 9 && minor == 0;
  const int per_clock = sm80 ? (bf16 ? 2048 : 128) : sm90 ? (bf16 ? 4096 : 256) : 0;
  if (per_clock == 0) {
    *how = fmt::format("{} peak unknown for {} (sm_{}{}: neither a datasheet entry nor FLOP/clk/SM for sm_80, sm_90)",
                       what, name, major, minor);
    return 0;
  }
  *how = fmt::format("{} peak, {} (no datasheet entry), sm_{}{}: {} FLOP/clk/SM x {} SMs x {:.3f} GHz, the device's "
                     "maximum clock (datasheets quote tensor-core peaks at a lower one)",
                     what, name, major, minor, per_clock, sms, clock_khz * 1e-6);
  return double(per_clock) * sms * clock_khz * 1e3;
}

}  // namespace trident::cuda
