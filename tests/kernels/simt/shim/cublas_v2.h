#pragma once
// SIMT emulation (cuda_runtime.h here): the cuBLAS calls kernels/cuda/gemm.cu makes, as a plain column-major GEMM on
// the host (fp32 accumulation in k order, bf16 rounded to nearest even on output). It checks the operand layout
// gemm.cu hands to cuBLAS (the row-major/column-major swap, leading dimensions, strides, alpha and beta), not
// cuBLAS's arithmetic; TF32 compute is computed in full fp32. A GEMM queues on the handle's stream, as a launch
// does. One liberty cuBLAS takes is modelled: a handle whose math mode allows reduced-precision reductions (no
// CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION) may split K and sum the partial products in the output type, so
// there a bf16 result is rounded twice (each half of K, then their sum), as cuBLAS's split-K kernels may do.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "kernels/shared/bf16.h"

using cublasStatus_t = int;
enum : int { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_INVALID_VALUE = 7, CUBLAS_STATUS_NOT_SUPPORTED = 15 };
enum cublasOperation_t { CUBLAS_OP_N, CUBLAS_OP_T };
enum cublasMath_t { CUBLAS_DEFAULT_MATH = 0, CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION = 16 };
struct cublasContext {
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
  cudaStream_t stream = nullptr;  // where its GEMMs queue (cublasSetStream)
  void* workspace = nullptr;      // the caller's (cublasSetWorkspace), or nullptr: cuBLAS's own pool
  std::size_t workspace_bytes = 0;
};
using cublasHandle_t = cublasContext*;
enum cublasComputeType_t { CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_FAST_TF32 };
enum cublasGemmAlgo_t { CUBLAS_GEMM_DEFAULT };
enum cudaDataType_t { CUDA_R_32F, CUDA_R_16BF };

inline cublasStatus_t cublasCreate(cublasHandle_t* handle) {
  *handle = new cublasContext;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasDestroy(cublasHandle_t handle) {
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}
inline const char* cublasGetStatusString(cublasStatus_t) { return "cuBLAS status (SIMT emulation)"; }
// As cuBLAS documents: setting the stream puts the handle back on cuBLAS's own workspace pool.
inline cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
  handle->stream = stream;
  handle->workspace = nullptr;
  handle->workspace_bytes = 0;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasSetWorkspace(cublasHandle_t handle, void* workspace, std::size_t bytes) {
  handle->workspace = workspace;
  handle->workspace_bytes = bytes;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  handle->math = mode;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t* mode) {
  *mode = handle->math;
  return CUBLAS_STATUS_SUCCESS;
}

namespace trident::simt {

inline float load(const void* p, cudaDataType_t type, int64_t i) {
  if (type == CUDA_R_32F) return static_cast<const float*>(p)[i];
  return bf16_to_float(static_cast<const bf16*>(p)[i]);
}
inline void store(void* p, cudaDataType_t type, int64_t i, float x) {
  if (type == CUDA_R_32F)
    static_cast<float*>(p)[i] = x;
  else
    static_cast<bf16*>(p)[i] = float_to_bf16(x);
}

// The value `x` takes when stored as `type` (bf16 rounds to nearest even).
inline float rounded(float x, cudaDataType_t type) {
  return type == CUDA_R_32F ? x : bf16_to_float(float_to_bf16(x));
}

// Column-major C (m x n, ldc) = alpha op(A) op(B) + beta C, op(A) m x k, op(B) k x n; beta == 0 ignores C. With
// `split_k_in_output_type`, the two halves of K are summed apart and each rounded to C's type before their sum.
inline void gemm(cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n, int64_t k, float alpha,
                 const void* A, cudaDataType_t a_type, int64_t lda, const void* B, cudaDataType_t b_type, int64_t ldb,
                 float beta, void* C, cudaDataType_t c_type, int64_t ldc, bool split_k_in_output_type) {
  const int64_t split = split_k_in_output_type ? k / 2 : k;
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      float part[2] = {0.0f, 0.0f};
      for (int64_t p = 0; p < k; ++p) {
        const float a = load(A, a_type, ta == CUBLAS_OP_N ? i + p * lda : p + i * lda);
        const float b = load(B, b_type, tb == CUBLAS_OP_N ? p + j * ldb : j + p * ldb);
        part[p < split ? 0 : 1] += a * b;
      }
      const float sum = split == k ? part[0] : rounded(part[0], c_type) + rounded(part[1], c_type);
      const float c = beta == 0.0f ? 0.0f : beta * load(C, c_type, i + j * ldc);
      store(C, c_type, i + j * ldc, alpha * sum + c);
    }
}

inline std::size_t element_size(cudaDataType_t type) { return type == CUDA_R_32F ? 4 : 2; }

}  // namespace trident::simt

inline cublasStatus_t cublasGemmEx_64(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
                                      int64_t n, int64_t k, const void* alpha, const void* A, cudaDataType_t a_type,
                                      int64_t lda, const void* B, cudaDataType_t b_type, int64_t ldb,
                                      const void* beta, void* C, cudaDataType_t c_type, int64_t ldc,
                                      cublasComputeType_t, cublasGemmAlgo_t) {
  if (m < 0 || n < 0 || k < 0) return CUBLAS_STATUS_INVALID_VALUE;
  const bool split = (handle->math & CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION) == 0 && c_type != CUDA_R_32F;
  const float a = *static_cast<const float*>(alpha), b = *static_cast<const float*>(beta);  // host pointer mode
  trident::simt::enqueue(handle->stream, [=] {
    trident::simt::gemm(ta, tb, m, n, k, a, A, a_type, lda, B, b_type, ldb, b, C, c_type, ldc, split);
  });
  return CUBLAS_STATUS_SUCCESS;
}

inline cublasStatus_t cublasGemmStridedBatchedEx_64(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb,
                                                    int64_t m, int64_t n, int64_t k, const void* alpha, const void* A,
                                                    cudaDataType_t a_type, int64_t lda, int64_t stride_a,
                                                    const void* B, cudaDataType_t b_type, int64_t ldb,
                                                    int64_t stride_b, const void* beta, void* C,
                                                    cudaDataType_t c_type, int64_t ldc, int64_t stride_c,
                                                    int64_t batch, cublasComputeType_t compute,
                                                    cublasGemmAlgo_t algo) {
  using trident::simt::element_size;
  for (int64_t b = 0; b < batch; ++b) {
    const cublasStatus_t rc = cublasGemmEx_64(
        handle, ta, tb, m, n, k, alpha, static_cast<const char*>(A) + b * stride_a * element_size(a_type), a_type,
        lda, static_cast<const char*>(B) + b * stride_b * element_size(b_type), b_type, ldb, beta,
        static_cast<char*>(C) + b * stride_c * element_size(c_type), c_type, ldc, compute, algo);
    if (rc != CUBLAS_STATUS_SUCCESS) return rc;
  }
  return CUBLAS_STATUS_SUCCESS;
}
