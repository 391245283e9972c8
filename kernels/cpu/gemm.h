#pragma once
// Row-major single-precision GEMM through the BLAS library device.blas chose (kernels/cpu/blas.h): C = alpha * op(A)
// op(B) + beta * C, op = transpose or not. Called from serial code it uses OpenMP's thread count; called inside an
// OpenMP region it runs on the calling thread, so per-head / per-tile GEMMs nest without oversubscribing the cores.
#include <cstdint>

#include "kernels/shared/trans.h"

namespace trident::cpu {


// op(A) is M x K, op(B) is K x N, C is M x N; lda/ldb/ldc are row strides of the stored matrices.
void gemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

// `batch` independent GEMMs, matrix i at A + i*stride_a etc., spread over the OpenMP threads.
void gemm_strided_batched(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                          int64_t lda, int64_t stride_a, const float* B, int64_t ldb, int64_t stride_b, float beta,
                          float* C, int64_t ldc, int64_t stride_c, int64_t batch);

}  // namespace trident::cpu
