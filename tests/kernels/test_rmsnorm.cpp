#include <catch2/catch.hpp>

#include "kernels/cpu/rmsnorm.h"
#include "kernels/reference/layers_naive.h"
#include "support/assert_close.h"
#include "support/gradcheck.h"
#include "support/random.h"

using namespace trident;
using namespace trident::test;

TEST_CASE("rmsnorm (per-head, no weight) matches the double reference, forward and backward", "[kernels][rmsnorm]") {
  // (D = 1 is degenerate: the output is sign(x) and the true gradient is O(eps), all rounding)
  auto [rows, D] = GENERATE(std::pair<int64_t, int>{1, 3}, std::pair<int64_t, int>{37, 16}, std::pair<int64_t, int>{96, 64});
  CAPTURE(rows, D);
  auto x = random_normal<float>(rows * D, 1, 3.0), dy = random_normal<float>(rows * D, 2);
  std::vector<float> y(rows * D), rrms(rows), dx(rows * D, 0.5f);
  cpu::rmsnorm_forward(y.data(), rrms.data(), x.data(), rows, D);
  auto xd = cast<double>(x), dyd = cast<double>(dy);
  check_close("rmsnorm forward", y, reference::rmsnorm_forward(xd, rows, D), 1e-5);
  cpu::rmsnorm_backward(dx.data(), dy.data(), x.data(), rrms.data(), rows, D);
  for (auto& v : dx) v -= 0.5f;
  check_close("rmsnorm backward", dx, reference::rmsnorm_backward(dyd, xd, rows, D), 1e-5);
}

TEST_CASE("rmsnorm reference backward matches finite differences", "[kernels][rmsnorm]") {
  const int64_t rows = 3;
  const int D = 5;
  auto x = random_normal<double>(rows * D, 3), dy = random_normal<double>(rows * D, 4);
  check_gradient("rmsnorm dx", [&] { return weighted_sum(reference::rmsnorm_forward(x, rows, D), dy); }, x,
                 reference::rmsnorm_backward(dy, x, rows, D));
}
