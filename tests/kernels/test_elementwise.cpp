#include <catch2/catch.hpp>

#include "kernels/cpu/gelu.h"
#include "kernels/cpu/residual.h"
#include "kernels/cpu/strided_rows.h"
#include "kernels/reference/elementwise_naive.h"
#include "support/assert_close.h"
#include "support/bf16_vectors.h"
#include "support/gradcheck.h"
#include "support/random.h"

using namespace trident;
using namespace trident::test;

TEST_CASE("bias + gelu forward and backward match the double reference and finite differences", "[kernels][gelu]") {
  const int64_t N = 13;
  const int OC = 97;  // odd, not a multiple of any vector width
  auto pre = random_normal<float>(N * OC, 1, 2.0), bias = random_normal<float>(OC, 3);
  auto dout = random_normal<float>(N * OC, 2);
  auto pre_d = cast<double>(pre), bias_d = cast<double>(bias), w = cast<double>(dout);
  auto biased = [&] {
    std::vector<double> x(pre_d);
    for (int64_t i = 0; i < N * OC; ++i) x[i] += bias_d[i % OC];
    return x;
  };

  std::vector<float> h(pre), y(N * OC);
  cpu::bias_gelu_forward(h.data(), y.data(), bias.data(), N, OC);
  check_close("pre-activation with its bias", h, biased(), 1e-6);
  check_close("gelu forward", y, reference::gelu(biased()), 1e-6);
  std::vector<float> y_alone(N * OC), h_alone(pre);
  cpu::bias_gelu_forward(h_alone.data(), y_alone.data(), nullptr, N, OC);
  CHECK(h_alone == pre);
  check_close("gelu forward without a bias", y_alone, reference::gelu(pre_d), 1e-6);

  // analytic gradients of sum(dout * gelu(pre + bias)) checked by finite differences, in pre and in bias
  std::vector<float> dpre(N * OC, 7.0f), dbias(OC, 0.25f);  // dpre is overwritten, dbias accumulates
  cpu::bias_gelu_backward(dpre.data(), dbias.data(), h.data(), dout.data(), N, OC);
  for (auto& v : dbias) v -= 0.25f;
  auto loss = [&] { return weighted_sum(reference::gelu(biased()), w); };
  check_close("gelu backward vs finite differences", dpre, numeric_gradient(loss, pre_d), 1e-5);
  check_close("bias gradient vs finite differences", dbias, numeric_gradient(loss, bias_d), 1e-4);
  std::vector<float> dpre_alone(N * OC, 7.0f);
  cpu::bias_gelu_backward(dpre_alone.data(), nullptr, h.data(), dout.data(), N, OC);
  CHECK(dpre_alone == dpre);
}

TEST_CASE("residual forward adds and backward feeds both branches", "[kernels][residual]") {
  const int64_t n = 1001;
  auto a = random_normal<float>(n, 3), b = random_normal<float>(n, 4), dout = random_normal<float>(n, 5);
  std::vector<float> out(n);
  cpu::residual_forward(out.data(), a.data(), b.data(), n);
  std::vector<double> expect(n);
  for (int64_t i = 0; i < n; ++i) expect[i] = double(a[i]) + double(b[i]);
  check_close("residual forward", out, expect, 1e-7);

  std::vector<float> da(n, 1.0f), db(n, -1.0f);
  cpu::residual_backward(da.data(), db.data(), dout.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    REQUIRE(da[i] == 1.0f + dout[i]);
    REQUIRE(db[i] == -1.0f + dout[i]);
  }
}

TEST_CASE("copy_rows and add_rows move a block of rows between strides and leave the gaps alone", "[kernels][rows]") {
  // A (3 x 2) block from columns 1..2 of a (3 x 5) matrix into columns 0..1 of a (3 x 4) one.
  std::vector<float> src(15);
  for (int i = 0; i < 15; ++i) src[i] = float(i);
  std::vector<float> dst(12, -1.0f);
  cpu::copy_rows(dst.data(), 4, src.data() + 1, 5, 3, 2);
  CHECK(dst == std::vector<float>{1, 2, -1, -1, 6, 7, -1, -1, 11, 12, -1, -1});
  cpu::add_rows(dst.data() + 2, 4, src.data() + 3, 5, 3, 2);
  CHECK(dst == std::vector<float>{1, 2, 2, 3, 6, 7, 7, 8, 11, 12, 12, 13});
  cpu::copy_rows(dst.data(), 4, src.data(), 5, 0, 2);  // no rows: nothing to do
  CHECK(dst[0] == 1);

  // bf16: copies are exact; a sum is taken in fp32 and rounded once (1 + 2^-8 is not a bf16: it rounds to even, 1)
  std::vector<bf16> a = to_bf16(std::vector<float>{1.0f, 3.0f, 2.0f, -1.0f}), b(4);
  cpu::copy_rows(b.data(), 2, a.data() + 1, 2, 2, 1);
  CHECK(to_f32(b)[0] == 3.0f);
  CHECK(to_f32(b)[2] == -1.0f);
  const std::vector<bf16> tiny = to_bf16(std::vector<float>{0.00390625f, 1.0f});
  cpu::add_rows(a.data(), 2, tiny.data(), 1, 2, 1);
  CHECK(to_f32(a) == std::vector<float>{1.0f, 3.0f, 3.0f, -1.0f});
}
