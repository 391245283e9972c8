// The compute fit recovers known coefficients from synthetic timings.
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "kernels/common/error.h"
#include "parallel/cost/fit.h"

namespace trident::cost {
namespace {

TEST_CASE("the least-squares fit recovers alpha1, alpha2 and beta1 from exact timings", "[cost]") {
  // GPT-7B's coefficients (docs/methods.md §3.3), in seconds
  const double a1 = 5.128e-9, a2 = 1.8396e-4, b1 = 0.6294;
  std::vector<Timing> timings;
  for (int64_t d : {1, 8, 64})
    for (int64_t s : {1024, 4096, 16384, 65536, 262144})
      timings.push_back({s, d, (a1 * s * s + a2 * s) / d + b1});
  const ComputeSection c = fit_compute(timings);
  CHECK(c.alpha1_s_per_token2 == Approx(a1).epsilon(1e-9));
  CHECK(c.alpha2_s_per_token == Approx(a2).epsilon(1e-9));
  CHECK(c.beta1_s == Approx(b1).epsilon(1e-9));
}

TEST_CASE("a profile's lengths halve from the longest down to the shortest, ascending", "[cost]") {
  CHECK(halving_lengths(1343, 16, 8) == std::vector<int64_t>{20, 41, 83, 167, 335, 671, 1343});
  CHECK(halving_lengths(4096, 16, 8) == std::vector<int64_t>{32, 64, 128, 256, 512, 1024, 2048, 4096});
  CHECK(halving_lengths(12, 3, 8) == std::vector<int64_t>{3, 6, 12});
  CHECK(halving_lengths(40, 16, 8) == std::vector<int64_t>{20, 40});  // too few: fit_compute refuses them
}

TEST_CASE("the fit stays close under 1% noise", "[cost]") {
  const double a1 = 2e-10, a2 = 3e-6, b1 = 0.004;
  std::mt19937_64 rng(1);
  std::normal_distribution<double> noise(0, 0.01);
  std::vector<Timing> timings;
  for (int rep = 0; rep < 5; ++rep)
    for (int64_t s : {256, 512, 1024, 2048, 4096, 8192, 16384, 32768})
      timings.push_back({s, 1, (a1 * s * s + a2 * s + b1) * (1 + noise(rng))});
  const ComputeSection c = fit_compute(timings);
  CHECK(c.alpha1_s_per_token2 == Approx(a1).epsilon(0.05));
  CHECK(c.alpha2_s_per_token == Approx(a2).epsilon(0.05));
  CHECK(c.beta1_s == Approx(b1).epsilon(0.2));
}

TEST_CASE("relative errors pin the linear term where the quadratic one dominates the long sequences", "[cost]") {
  // A small model's profile: attention equals the rest at L0 = a2 / a1 = 600 tokens, so at 4,096 the quadratic term
  // is 7x the linear one; timings of 32..4,096 tokens with 3% noise. What a short document costs (a2) must come out
  // within 10%, as FlexSP's groups of short documents are planned with it.
  const double a1 = 6e-8, a2 = 3.6e-5, b1 = 1e-3;
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0, 0.03);
  std::vector<Timing> timings;
  for (int rep = 0; rep < 3; ++rep)
    for (int64_t s = 32; s <= 4096; s *= 2) timings.push_back({s, 1, (a1 * s * s + a2 * s + b1) * (1 + noise(rng))});
  const ComputeSection c = fit_compute(timings);
  CHECK(c.alpha2_s_per_token == Approx(a2).epsilon(0.1));
  CHECK(c.alpha1_s_per_token2 == Approx(a1).epsilon(0.1));
}

TEST_CASE("a term that is really zero is fitted as zero, never negative", "[cost]") {
  std::vector<Timing> timings;
  for (int64_t s : {100, 200, 400, 800}) timings.push_back({s, 1, 1e-5 * s - (s == 800 ? 1e-4 : 0)});
  const ComputeSection c = fit_compute(timings);
  CHECK(c.alpha1_s_per_token2 >= 0);
  CHECK(c.alpha2_s_per_token > 0);
  CHECK(c.beta1_s >= 0);
}

TEST_CASE("the fit needs three distinct lengths", "[cost]") {
  std::vector<Timing> two = {{100, 1, 0.1}, {200, 1, 0.2}, {200, 1, 0.21}};
  CHECK_THROWS_WITH(fit_compute(two), Catch::Contains("3 or more distinct"));
  std::vector<Timing> bad = {{0, 1, 0.1}, {200, 1, 0.2}, {300, 1, 0.3}};
  CHECK_THROWS_AS(fit_compute(bad), ConfigError);
}

}  // namespace
}  // namespace trident::cost
