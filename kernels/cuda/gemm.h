#pragma once
// Row-major GEMM on the device through cuBLAS: C = alpha * op(A) op(B) + beta * C, op = transpose or not, with the
// argument order and meaning of kernels/cpu/gemm.h plus a trailing stream. cuBLAS is column-major, so the launcher
// asks it for C^T = op(B)^T op(A)^T: a row-major matrix with row stride ld is the column-major transpose with the
// same ld, hence operands and M/N swap and the Trans flags are kept.
//
// Storage type T is float or bf16 for A and B; C is T, or float with bf16 A and B (fp32 gradient accumulators, e.g.
// dweight += inp^T @ dout with bf16 activations). alpha and beta are fp32 and the arithmetic is fp32
// (CUBLAS_COMPUTE_32F); bf16 results are rounded once, from the fp32 accumulator.
//
// TF32: off by default, so fp32 GEMMs match the CPU backend to fp32 rounding. A caller that accepts TF32 tensor-core
// products (inputs rounded to 10 mantissa bits, ~1e-3 relative error, several times faster on A100/H100) opts in
// per call with the trailing `math = Fp32Math::tf32`; it only affects float A/B/C and is ignored for bf16 inputs.
// (NVIDIA_TF32_OVERRIDE=0 can only turn TF32 off, never on, so the default stays exact whatever the environment.)
//
// K == 0 gives C = beta * C (beta == 0 writes zeros), as BLAS does. M == 0, N == 0 or batch == 0 is a no-op.
// Every call is asynchronous on `stream`.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/shared/trans.h"

namespace trident::cuda {

// Precision of fp32 GEMMs: exact fp32 FMA (default) or TF32 tensor cores (opt-in, see above).
enum class Fp32Math : bool { exact = false, tf32 = true };

// The cuBLAS handle of the calling thread for the current device, created on first use (one per thread and device,
// destroyed when the thread exits) and bound to `stream` before being returned. cuBLAS handles are not safe to share
// between threads that change the stream, hence one per thread; every launcher calls this right before its cuBLAS
// call, so a handle never runs on a stale stream. The handle's math mode is cuBLAS's default (no TF32) with
// reduced-precision reductions disallowed (split-K partial sums stay fp32), and its pointer mode is the host's
// (alpha/beta on the host). Its workspace is ours, not cuBLAS's pool: cublas_workspace_bytes of device memory for
// each stream the handle runs on (a workspace shared by two streams would race), taken with cudaMalloc when the
// stream is first seen and kept until the thread exits, so no GEMM allocates mid-run. Results are bit-reproducible
// run to run on the same GPU model and cuBLAS version, as cuBLAS documents.
cublasHandle_t cublas_handle(cudaStream_t stream);

// The workspace cublas_handle gives a handle on `device` for each stream: cuBLAS's recommended size, 32 MiB on
// Hopper (sm_90) and later, 4 MiB before.
std::size_t cublas_workspace_bytes(int device);

// op(A) is M x K, op(B) is K x N, C is M x N; lda/ldb/ldc are row strides of the stored (row-major) matrices.
template <class T, class TC = T>
void gemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const T* A, int64_t lda, const T* B,
          int64_t ldb, float beta, TC* C, int64_t ldc, cudaStream_t stream, Fp32Math math = Fp32Math::exact);

// `batch` independent GEMMs, matrix i at A + i*stride_a, B + i*stride_b, C + i*stride_c (strides in elements).
template <class T, class TC = T>
void gemm_strided_batched(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const T* A, int64_t lda,
                          int64_t stride_a, const T* B, int64_t ldb, int64_t stride_b, float beta, TC* C, int64_t ldc,
                          int64_t stride_c, int64_t batch, cudaStream_t stream, Fp32Math math = Fp32Math::exact);

}  // namespace trident::cuda
