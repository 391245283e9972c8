#include <catch2/catch.hpp>

#include "kernels/cpu/rmsnorm.h"
#include "kernels/reference/layers_naive.h"
#include "support/assert_close.h"
#include "support/gradcheck.h"
#include "support/random.h"
#include "support/vector_ops.h"

using namespace trident;
using namespace trident::test;

TEST_CASE("rmsnorm (per-head, no weight) matches the double reference, forward and backward", "[kernels][rmsnorm]") {
  // (D = 1 is degenerate: the output is sign(x) and the true gradient is O(eps), all rounding)
  auto [rows, D] =
      GENERATE(std::pair<int64_t, int>{1, 3}, std::pair<int64_t, int>{37, 16}, std::pair<int64_t, int>{96, 64});
  CAPTURE(rows, D);
  auto x = random_normal<float>(rows * D, 1, 3.0), dy = random_normal<float>(rows * D, 2);
  std::vector<float> y(rows * D), rrms(rows), dx(rows * D, 0.5f), dgate(rows * D, 7.0f);
  cpu::rmsnorm_forward(y.data(), rrms.data(), x.data(), nullptr, rows, D);
  auto xd = cast<double>(x), dyd = cast<double>(dy);
  check_close("rmsnorm forward", y, reference::rmsnorm_forward(xd, rows, D), 1e-5);
  cpu::rmsnorm_backward(dx.data(), dgate.data(), dy.data(), x.data(), nullptr, rrms.data(), rows, D);
  for (auto& v : dx) v -= 0.5f;
  check_close("rmsnorm backward", dx, reference::rmsnorm_backward(dyd, xd, rows, D).dx, 1e-5);
  CHECK(dgate == std::vector<float>(rows * D, 7.0f));  // without a gate, dgate is not touched
}

TEST_CASE("gated rmsnorm matches the double reference, forward and backward (dinp and dgate accumulate)",
          "[kernels][rmsnorm]") {
  // per-head rows (D = 64), a whole GPT-2-small row (D = 768), and an odd width
  auto [rows, D] = GENERATE(std::pair<int64_t, int>{1, 3}, std::pair<int64_t, int>{37, 64},
                            std::pair<int64_t, int>{9, 768}, std::pair<int64_t, int>{5, 45});
  CAPTURE(rows, D);
  // the gate as the model feeds it: any sign, magnitudes around 1
  auto x = random_normal<float>(rows * D, 5, 3.0), gate = random_normal<float>(rows * D, 6, 1.5, 0.3);
  auto dy = random_normal<float>(rows * D, 7), dx0 = random_normal<float>(rows * D, 8);
  auto dgate0 = random_normal<float>(rows * D, 9);
  std::vector<float> y(rows * D), rrms(rows), dx = dx0, dgate = dgate0;
  cpu::rmsnorm_forward(y.data(), rrms.data(), x.data(), gate.data(), rows, D);
  auto xd = cast<double>(x), dyd = cast<double>(dy), gd = cast<double>(gate);
  check_close("gated rmsnorm forward", y, reference::rmsnorm_forward(xd, rows, D, &gd), 1e-5);
  // rrms is the gate-free statistic
  std::vector<float> y_plain(rows * D), rrms_plain(rows);
  cpu::rmsnorm_forward(y_plain.data(), rrms_plain.data(), x.data(), nullptr, rows, D);
  CHECK(rrms == rrms_plain);

  cpu::rmsnorm_backward(dx.data(), dgate.data(), dy.data(), x.data(), gate.data(), rrms.data(), rows, D);
  const auto want = reference::rmsnorm_backward(dyd, xd, rows, D, &gd);
  check_close("gated rmsnorm dinp", minus(dx, dx0), want.dx, 1e-5);
  check_close("gated rmsnorm dgate", minus(dgate, dgate0), want.dgate, 1e-5);
}

TEST_CASE("rmsnorm reference backward matches finite differences", "[kernels][rmsnorm]") {
  const int64_t rows = 3;
  const int D = 5;
  auto x = random_normal<double>(rows * D, 3), dy = random_normal<double>(rows * D, 4);
  check_gradient("rmsnorm dx", [&] { return weighted_sum(reference::rmsnorm_forward(x, rows, D), dy); }, x,
                 reference::rmsnorm_backward(dy, x, rows, D).dx);
}

TEST_CASE("gated rmsnorm reference backward matches finite differences (dinp and dgate)", "[kernels][rmsnorm]") {
  const int64_t rows = 3;
  const int D = 7;
  auto x = random_normal<double>(rows * D, 10), gate = random_normal<double>(rows * D, 11, 1.0, 0.5);
  auto dy = random_normal<double>(rows * D, 12);
  const auto grads = reference::rmsnorm_backward(dy, x, rows, D, &gate);
  auto loss = [&] { return weighted_sum(reference::rmsnorm_forward(x, rows, D, &gate), dy); };
  check_gradient("gated rmsnorm dx", loss, x, grads.dx);
  check_gradient("gated rmsnorm dgate", loss, gate, grads.dgate);
}
