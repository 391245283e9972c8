#include <catch2/catch.hpp>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/linear.h"
#include "kernels/reference/layers_naive.h"
#include "support/assert_close.h"
#include "support/gradcheck.h"
#include "support/random.h"

using namespace trident;
using namespace trident::test;

TEST_CASE("linear (GEMM + bias) matches the double reference, forward and backward", "[kernels][linear]") {
  auto [N, C, OC] = GENERATE(std::tuple<int64_t, int, int>{1, 1, 1}, std::tuple<int64_t, int, int>{5, 17, 3},
                             std::tuple<int64_t, int, int>{67, 96, 288});
  bool with_bias = GENERATE(true, false);
  CAPTURE(N, C, OC, with_bias);
  auto x = random_normal<float>(N * C, 1), w = random_normal<float>(C * OC, 2, 0.2), b = random_normal<float>(OC, 3);
  auto dout = random_normal<float>(N * OC, 4);
  auto xd = cast<double>(x), wd = cast<double>(w), bd = cast<double>(b), dyd = cast<double>(dout);

  std::vector<float> y(N * OC, 99.0f);  // forward overwrites
  cpu::linear_forward(y.data(), x.data(), w.data(), with_bias ? b.data() : nullptr, N, C, OC);
  check_close("linear forward", y, reference::linear_forward(xd, wd, with_bias ? &bd : nullptr, N, C, OC), 1e-5);

  std::vector<float> dx(N * C, 1.0f), dw(C * OC, 1.0f), db(OC, 1.0f);
  cpu::linear_backward(dx.data(), dw.data(), with_bias ? db.data() : nullptr, dout.data(), x.data(), w.data(), N, C,
                       OC);
  for (auto* g : {&dx, &dw, &db})
    for (auto& v : *g) v -= 1.0f;
  auto ref = reference::linear_backward(dyd, xd, wd, N, C, OC);
  check_close("linear dinp", dx, ref.dx, 1e-5);
  check_close("linear dweight", dw, ref.dw, 1e-5);
  if (with_bias) check_close("linear dbias", db, ref.db, 1e-5);
}

TEST_CASE("linear reference backward matches finite differences", "[kernels][linear]") {
  const int64_t N = 3;
  const int C = 4, OC = 5;
  auto x = random_normal<double>(N * C, 5), w = random_normal<double>(C * OC, 6), b = random_normal<double>(OC, 7);
  auto dy = random_normal<double>(N * OC, 8);
  auto loss = [&] { return weighted_sum(reference::linear_forward(x, w, &b, N, C, OC), dy); };
  auto g = reference::linear_backward(dy, x, w, N, C, OC);
  check_gradient("linear dx", loss, x, g.dx);
  check_gradient("linear dw", loss, w, g.dw);
  check_gradient("linear db", loss, b, g.db);
}

TEST_CASE("gemm handles every transpose combination, strides and strided batches", "[kernels][gemm]") {
  const int64_t M = 13, N = 7, K = 29, pad = 3, batch = 5;
  auto ta = GENERATE(Trans::no, Trans::yes);
  auto tb = GENERATE(Trans::no, Trans::yes);
  const bool at = ta == Trans::yes, bt = tb == Trans::yes;
  const int64_t lda = (at ? M : K) + pad, ldb = (bt ? K : N) + pad, ldc = N + pad;
  const int64_t sa = (at ? K : M) * lda, sb = (bt ? N : K) * ldb, sc = M * ldc;
  auto A = random_normal<float>(batch * sa, 9), B = random_normal<float>(batch * sb, 10);
  auto C0 = random_normal<float>(batch * sc, 11);
  const float alpha = 0.75f, beta = 0.5f;

  std::vector<double> expect(C0.begin(), C0.end());
  for (int64_t i = 0; i < batch; ++i)
    for (int64_t r = 0; r < M; ++r)
      for (int64_t c = 0; c < N; ++c) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) {
          double a = at ? A[i * sa + k * lda + r] : A[i * sa + r * lda + k];
          double b = bt ? B[i * sb + c * ldb + k] : B[i * sb + k * ldb + c];
          acc += a * b;
        }
        expect[i * sc + r * ldc + c] = alpha * acc + beta * C0[i * sc + r * ldc + c];
      }

  std::vector<float> single = C0;
  for (int64_t i = 0; i < batch; ++i)
    cpu::gemm(ta, tb, M, N, K, alpha, A.data() + i * sa, lda, B.data() + i * sb, ldb, beta, single.data() + i * sc,
              ldc);
  check_close("gemm", single, expect, 1e-5);

  std::vector<float> batched = C0;
  cpu::gemm_strided_batched(ta, tb, M, N, K, alpha, A.data(), lda, sa, B.data(), ldb, sb, beta, batched.data(), ldc,
                            sc, batch);
  check_close("gemm_strided_batched", batched, expect, 1e-5);
}
