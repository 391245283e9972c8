#pragma once
// Error checks for CUDA runtime and cuBLAS calls: a failure throws trident::RuntimeError naming the call, the file
// and line, and the library's message. Kept free of fmt/spdlog so .cu files stay plain CUDA C++.
#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace trident::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t rc, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t rc, const char* call, const char* file, int line);

}  // namespace trident::cuda

#define TRIDENT_CUDA_CHECK(call)                                                          \
  do {                                                                                    \
    cudaError_t trident_rc_ = (call);                                                     \
    if (trident_rc_ != cudaSuccess)                                                       \
      ::trident::cuda::throw_cuda_error(trident_rc_, #call, __FILE__, __LINE__);          \
  } while (0)

#define TRIDENT_CUBLAS_CHECK(call)                                                        \
  do {                                                                                    \
    cublasStatus_t trident_rc_ = (call);                                                  \
    if (trident_rc_ != CUBLAS_STATUS_SUCCESS)                                             \
      ::trident::cuda::throw_cublas_error(trident_rc_, #call, __FILE__, __LINE__);        \
  } while (0)

// After a kernel launch: a bad launch configuration shows up here, not at the next unrelated call.
#define TRIDENT_CUDA_CHECK_LAUNCH() TRIDENT_CUDA_CHECK(cudaGetLastError())
