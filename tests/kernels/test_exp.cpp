#include <cmath>
#include <limits>

#include <catch2/catch.hpp>

#include "kernels/shared/exp.h"

using namespace trident;

TEST_CASE("kernel_exp is within a few ulp of exp over the whole float range", "[kernels][exp]") {
  double worst = 0;
  for (float x = -87.0f; x <= 88.0f; x += 0.00731f) {
    double expect = std::exp(static_cast<double>(x));
    double rel = std::abs(kernel_exp(x) - expect) / expect;
    worst = std::max(worst, rel);
  }
  INFO("worst relative error " << worst);
  CHECK(worst < 3e-7);  // 2.5 ulp of float
  CHECK(kernel_exp(0.0f) == 1.0f);
}

TEST_CASE("kernel_exp edge cases: masked scores give exactly 0, NaN propagates, overflow is inf", "[kernels][exp]") {
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(kernel_exp(-inf) == 0.0f);
  CHECK(kernel_exp(-100.0f) == 0.0f);
  CHECK(kernel_exp(inf) == inf);
  CHECK(kernel_exp(89.0f) == inf);
  CHECK(std::isnan(kernel_exp(std::nanf(""))));
  CHECK(kernel_exp(-87.0f) > 0.0f);
}
