// kernels/cuda/check.h's error functions for the SIMT emulation (the real ones name the CUDA library's messages).
#include <string>

#include "core/common/error.h"
#include "kernels/cuda/check.h"

namespace trident::cuda {

void throw_cuda_error(cudaError_t rc, const char* call, const char* file, int line) {
  throw RuntimeError(std::string(call) + " failed (" + std::to_string(rc) + ") at " + file + ":" +
                     std::to_string(line));
}

void throw_cublas_error(cublasStatus_t rc, const char* call, const char* file, int line) {
  throw RuntimeError(std::string(call) + " failed (cuBLAS " + std::to_string(rc) + ") at " + file + ":" +
                     std::to_string(line));
}

}  // namespace trident::cuda
