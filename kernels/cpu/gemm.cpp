#include "kernels/cpu/gemm.h"

#include "kernels/cpu/blas.h"

namespace trident::cpu {

void gemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  blas_sgemm(ta == Trans::yes, tb == Trans::yes, static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), alpha,
             A, static_cast<int>(lda), B, static_cast<int>(ldb), beta, C, static_cast<int>(ldc));
}

void gemm_strided_batched(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                          int64_t lda, int64_t stride_a, const float* B, int64_t ldb, int64_t stride_b, float beta,
                          float* C, int64_t ldc, int64_t stride_c, int64_t batch) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < batch; ++i)
    gemm(ta, tb, M, N, K, alpha, A + i * stride_a, lda, B + i * stride_b, ldb, beta, C + i * stride_c, ldc);
}

}  // namespace trident::cpu
