// cuBLAS GEMMs against the CPU (OpenBLAS) GEMM on the same data, all four Trans combinations, odd M/N/K and row
// strides wider than the rows (the padding must come back untouched).
// Tolerances (max error normalised by max |reference|):
//   fp32            1e-5  fp32 FMA on both sides (no TF32); only the summation order differs, ~K ulp at worst.
//   bf16 -> fp32 C  1e-5  inputs rounded to bf16 before the CPU runs, so products are exact in fp32 on both sides.
//   bf16 -> bf16 C  4e-3  the same, plus one rounding of C to bf16 (2^-9 relative).
//   TF32 opt-in     1e-2  inputs rounded to 10 mantissa bits (2^-11 relative per product).
#include <string>

#include <catch2/catch.hpp>

#include "kernels/cpu/gemm.h"
#include "kernels/cuda/gemm.h"
#include "kernels/shared/bf16.h"
#include "support/assert_close.h"
#include "support/bf16_vectors.h"
#include "support/device_vector.h"
#include "support/random.h"

using namespace trident;
using namespace trident::test;

namespace {

// Shape of one GEMM problem in row-major storage: op(A) M x K, op(B) K x N, C M x N, each with padded row strides.
struct GemmProblem {
  bool ta, tb;
  int64_t M, N, K;
  int64_t a_rows() const { return ta ? K : M; }
  int64_t a_cols() const { return ta ? M : K; }
  int64_t b_rows() const { return tb ? N : K; }
  int64_t b_cols() const { return tb ? K : N; }
  int64_t lda() const { return a_cols() + 3; }
  int64_t ldb() const { return b_cols() + 1; }
  int64_t ldc() const { return N + 2; }
  int64_t size_a() const { return a_rows() * lda(); }
  int64_t size_b() const { return b_rows() * ldb(); }
  int64_t size_c() const { return M * ldc(); }
  Trans cpu_ta() const { return ta ? Trans::yes : Trans::no; }
  Trans cpu_tb() const { return tb ? Trans::yes : Trans::no; }
  Trans cuda_ta() const { return ta ? Trans::yes : Trans::no; }
  Trans cuda_tb() const { return tb ? Trans::yes : Trans::no; }
  std::string name() const {
    return std::string("gemm ") + (ta ? "T" : "N") + (tb ? "T" : "N") + " M=" + std::to_string(M) +
           " N=" + std::to_string(N) + " K=" + std::to_string(K);
  }
};

}  // namespace

TEST_CASE("cuda gemm equals the CPU gemm for every Trans combination (fp32, bf16, mixed, TF32)", "[cuda][gemm]") {
  const float alpha = 0.7f, beta = 0.3f;
  struct Shape {
    int64_t M, N, K;
  };
  // odd sizes, a single row / column, and K = 0 (C = beta * C)
  const Shape shapes[] = {{37, 53, 71}, {1, 129, 33}, {65, 1, 17}, {9, 11, 0}};
  uint64_t seed = 10;
  for (const Shape& s : shapes) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        const GemmProblem p{ta, tb, s.M, s.N, s.K};
        // fp32 and TF32 on full-precision data; the bf16 variants on the same data rounded to bf16
        const auto a = random_normal<float>(p.size_a(), ++seed), b = random_normal<float>(p.size_b(), ++seed);
        const auto c0 = random_normal<float>(p.size_c(), ++seed);
        const auto ar = round_bf16(a), br = round_bf16(b), c0r = round_bf16(c0);

        std::vector<float> c = c0, cr = c0r;
        cpu::gemm(p.cpu_ta(), p.cpu_tb(), p.M, p.N, p.K, alpha, a.data(), p.lda(), b.data(), p.ldb(), beta,
                  c.data(), p.ldc());
        cpu::gemm(p.cpu_ta(), p.cpu_tb(), p.M, p.N, p.K, alpha, ar.data(), p.lda(), br.data(), p.ldb(), beta,
                  cr.data(), p.ldc());

        DeviceVector<float> a_d(a), b_d(b), c_d(c0);
        cuda::gemm(p.cuda_ta(), p.cuda_tb(), p.M, p.N, p.K, alpha, a_d.data(), p.lda(), b_d.data(), p.ldb(), beta,
                   c_d.data(), p.ldc(), nullptr);
        check_close(p.name() + " fp32", c_d.to_host(), c, 1e-5);

        DeviceVector<float> c_tf32_d(c0);
        cuda::gemm(p.cuda_ta(), p.cuda_tb(), p.M, p.N, p.K, alpha, a_d.data(), p.lda(), b_d.data(), p.ldb(), beta,
                   c_tf32_d.data(), p.ldc(), nullptr, cuda::Fp32Math::tf32);
        check_close(p.name() + " tf32", c_tf32_d.to_host(), c, 1e-2);

        DeviceVector<bf16> ab_d(to_bf16(ar)), bb_d(to_bf16(br));
        DeviceVector<float> c_mixed_d(c0r);
        cuda::gemm(p.cuda_ta(), p.cuda_tb(), p.M, p.N, p.K, alpha, ab_d.data(), p.lda(), bb_d.data(), p.ldb(), beta,
                   c_mixed_d.data(), p.ldc(), nullptr);
        check_close(p.name() + " bf16 -> fp32", c_mixed_d.to_host(), cr, 1e-5);

        DeviceVector<bf16> cb_d(to_bf16(c0r));
        cuda::gemm(p.cuda_ta(), p.cuda_tb(), p.M, p.N, p.K, alpha, ab_d.data(), p.lda(), bb_d.data(), p.ldb(), beta,
                   cb_d.data(), p.ldc(), nullptr);
        check_close(p.name() + " bf16", to_f32(cb_d.to_host()), cr, 4e-3);
      }
    }
  }
}

TEST_CASE("cuda gemm_strided_batched equals the CPU batched gemm (fp32, bf16)", "[cuda][gemm]") {
  const float alpha = 1.0f, beta = 1.0f;  // accumulate, as the backward kernels do
  const int64_t batch = 5;
  uint64_t seed = 100;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const GemmProblem p{ta, tb, 17, 9, 33};
      // matrices apart by more than their size, so a wrong stride reads or writes the gaps
      const int64_t stride_a = p.size_a() + 5, stride_b = p.size_b() + 2, stride_c = p.size_c() + 3;
      auto a = round_bf16(random_normal<float>(stride_a * batch, ++seed));
      auto b = round_bf16(random_normal<float>(stride_b * batch, ++seed));
      auto c0 = round_bf16(random_normal<float>(stride_c * batch, ++seed));

      std::vector<float> c = c0;
      cpu::gemm_strided_batched(p.cpu_ta(), p.cpu_tb(), p.M, p.N, p.K, alpha, a.data(), p.lda(), stride_a, b.data(),
                                p.ldb(), stride_b, beta, c.data(), p.ldc(), stride_c, batch);

      DeviceVector<float> a_d(a), b_d(b), c_d(c0);
      cuda::gemm_strided_batched(p.cuda_ta(), p.cuda_tb(), p.M, p.N, p.K, alpha, a_d.data(), p.lda(), stride_a,
                                 b_d.data(), p.ldb(), stride_b, beta, c_d.data(), p.ldc(), stride_c, batch, nullptr);
      check_close(p.name() + " batched fp32", c_d.to_host(), c, 1e-5);

      DeviceVector<bf16> ab_d(to_bf16(a)), bb_d(to_bf16(b)), cb_d(to_bf16(c0));
      cuda::gemm_strided_batched(p.cuda_ta(), p.cuda_tb(), p.M, p.N, p.K, alpha, ab_d.data(), p.lda(), stride_a,
                                 bb_d.data(), p.ldb(), stride_b, beta, cb_d.data(), p.ldc(), stride_c, batch, nullptr);
      check_close(p.name() + " batched bf16", to_f32(cb_d.to_host()), c, 4e-3);

      DeviceVector<float> c_mixed_d(c0);
      cuda::gemm_strided_batched(p.cuda_ta(), p.cuda_tb(), p.M, p.N, p.K, alpha, ab_d.data(), p.lda(), stride_a,
                                 bb_d.data(), p.ldb(), stride_b, beta, c_mixed_d.data(), p.ldc(), stride_c, batch,
                                 nullptr);
      check_close(p.name() + " batched bf16 -> fp32", c_mixed_d.to_host(), c, 1e-5);
    }
  }
}

// cuBLAS may split K and sum the partial products in the output type unless the handle disallows it; a bf16 result
// must be rounded once, from the fp32 sum (kernels/cuda/gemm.h). 1.0625 * 1.0625 = 1.12890625 lies halfway between
// two bf16 values and rounds down to 1.125, so summing the two products in bf16 gives 1.125 + 2^-8 -> 1.125 where
// the fp32 sum 1.1328125 is a bf16 value itself.
TEST_CASE("cuda bf16 gemm rounds its result once: no split-K reduction in bf16", "[cuda][gemm]") {
  cublasMath_t mode = CUBLAS_DEFAULT_MATH;
  REQUIRE(cublasGetMathMode(cuda::cublas_handle(nullptr), &mode) == CUBLAS_STATUS_SUCCESS);
  CHECK((mode & CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION) != 0);

  DeviceVector<bf16> a(to_bf16({1.0625f, 1.0f / 256})), b(to_bf16({1.0625f, 1.0f})), c(to_bf16({0.0f}));
  cuda::gemm(Trans::no, Trans::no, 1, 1, 2, 1.0f, a.data(), 2, b.data(), 1, 0.0f, c.data(), 1, nullptr);
  CHECK(bf16_to_float(c.to_host()[0]) == 1.1328125f);
}

#ifdef TRIDENT_SIMT_EMULATION
// Every GEMM runs on a workspace of ours, one per stream (kernels/cuda/gemm.h): cuBLAS's own pool would allocate
// device memory outside device.memory_gb mid-run. cublasSetStream drops the workspace (the emulation does as cuBLAS
// documents), so a handle moved to another stream must get its workspace again, and a shared one would race.
TEST_CASE("cuda gemm: the handle runs on our workspace, one per stream", "[cuda][gemm]") {
  cudaStream_t side = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) == cudaSuccess);
  const std::size_t bytes = cuda::cublas_workspace_bytes(0);
  CHECK(bytes >= std::size_t{4} << 20);
  cublasHandle_t h = cuda::cublas_handle(nullptr);
  CHECK(h->stream == nullptr);
  REQUIRE(h->workspace != nullptr);
  CHECK(h->workspace_bytes == bytes);
  void* legacy_workspace = h->workspace;
  CHECK(cuda::cublas_handle(side) == h);
  CHECK(h->stream == side);
  REQUIRE(h->workspace != nullptr);
  CHECK(h->workspace != legacy_workspace);
  CHECK(h->workspace_bytes == bytes);
  cuda::cublas_handle(nullptr);
  CHECK(h->workspace == legacy_workspace);  // kept, not taken again
  REQUIRE(cudaStreamDestroy(side) == cudaSuccess);
}
#endif
