// The CPU backend's bf16 overloads (kernels/cpu/bf16_emulation.h): each must be the fp32 kernel applied to the
// bf16 inputs, with outputs rounded to bf16 once, bit for bit. What can go wrong is the bookkeeping around the
// kernel: the extent of a strided or transposed matrix, an accumulating output that must start from its old values,
// nullptr arguments.
#include <vector>

#include <catch2/catch.hpp>

#include "kernels/backend.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/linear.h"
#include "support/bf16_vectors.h"
#include "support/random.h"

using namespace trident;
using namespace trident::test;

namespace {

bool same_bits(const std::vector<bf16>& a, const std::vector<bf16>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].bits != b[i].bits) return false;
  return true;
}

}  // namespace

TEST_CASE("bf16 GEMM on the cpu is the fp32 GEMM of the bf16 values, rounded once", "[kernels][bf16]") {
  const Trans ta = GENERATE(Trans::no, Trans::yes), tb = GENERATE(Trans::no, Trans::yes);
  const float beta = GENERATE(0.0f, 1.0f);
  const int64_t M = 7, N = 5, K = 9, pad = 3;  // row strides wider than the rows
  const int64_t lda = (ta == Trans::no ? K : M) + pad, ldb = (tb == Trans::no ? N : K) + pad, ldc = N + pad;
  const int64_t a_rows = ta == Trans::no ? M : K, b_rows = tb == Trans::no ? K : N;
  // Each buffer ends at its matrix's last element (no padding after the last row): an emulation that widened
  // rows * ld elements would read past it, one that widened fewer would multiply garbage.
  const std::vector<float> a = round_bf16(random_normal(a_rows * lda - pad, 1)), b = round_bf16(random_normal(b_rows * ldb - pad, 2));
  const std::vector<float> c0 = round_bf16(random_normal(M * ldc - pad, 3));

  std::vector<float> expect32 = c0;
  cpu::gemm(ta, tb, M, N, K, 0.5f, a.data(), lda, b.data(), ldb, beta, expect32.data(), ldc);
  std::vector<bf16> c16 = to_bf16(c0);
  cpu_backend().gemm(ta, tb, M, N, K, 0.5f, to_bf16(a).data(), lda, to_bf16(b).data(), ldb, beta, c16.data(), ldc);
  CHECK(same_bits(c16, to_bf16(expect32)));

  std::vector<float> c32 = c0;  // bf16 operands, fp32 result: no rounding of the output
  cpu_backend().gemm(ta, tb, M, N, K, 0.5f, to_bf16(a).data(), lda, to_bf16(b).data(), ldb, beta, c32.data(), ldc);
  CHECK(c32 == expect32);
}

TEST_CASE("bf16 linear backward on the cpu accumulates into dinp and leaves parameter gradients in fp32",
          "[kernels][bf16]") {
  const int64_t N = 6;
  const int C = 5, OC = 4;
  const std::vector<float> dout = round_bf16(random_normal(N * OC, 4)), inp = round_bf16(random_normal(N * C, 5));
  const std::vector<float> weight = round_bf16(random_normal(C * OC, 6)), dinp0 = round_bf16(random_normal(N * C, 7));
  const std::vector<float> dweight0 = random_normal(C * OC, 8), dbias0 = random_normal(OC, 9);

  std::vector<float> dinp = dinp0, dweight = dweight0, dbias = dbias0;
  cpu::linear_backward(dinp.data(), dweight.data(), dbias.data(), dout.data(), inp.data(), weight.data(), N, C, OC);

  std::vector<bf16> dinp16 = to_bf16(dinp0);
  std::vector<float> dweight16 = dweight0, dbias16 = dbias0;
  cpu_backend().linear_backward(dinp16.data(), dweight16.data(), dbias16.data(), to_bf16(dout).data(),
                                to_bf16(inp).data(), to_bf16(weight).data(), N, C, OC);
  CHECK(same_bits(dinp16, to_bf16(dinp)));
  CHECK(dweight16 == dweight);
  CHECK(dbias16 == dbias);

  // dinp may be nullptr (the first layer has no input gradient)
  std::vector<float> dweight_only = dweight0;
  cpu_backend().linear_backward(static_cast<bf16*>(nullptr), dweight_only.data(), nullptr, to_bf16(dout).data(),
                                to_bf16(inp).data(), to_bf16(weight).data(), N, C, OC);
  CHECK(dweight_only == dweight);
}

TEST_CASE("convert rounds fp32 to the nearest bf16", "[kernels][bf16]") {
  const std::vector<float> x = random_normal(1000, 10, 3.0);
  std::vector<bf16> y(x.size());
  cpu_backend().convert(y.data(), x.data(), static_cast<int64_t>(x.size()));
  CHECK(same_bits(y, to_bf16(x)));
}

TEST_CASE("convert widens bf16 to fp32 exactly", "[kernels][bf16]") {
  const std::vector<bf16> x = to_bf16(random_normal(1000, 11, 3.0));
  std::vector<float> y(x.size(), -1.0f);
  cpu_backend().convert(y.data(), x.data(), static_cast<int64_t>(x.size()));
  CHECK(y == to_f32(x));
}
