#include <cmath>

#include <omp.h>

#include <catch2/catch.hpp>

#include "kernels/cpu/adamw.h"
#include "kernels/cpu/grad_norm.h"
#include "kernels/reference/layers_naive.h"
#include "support/assert_close.h"
#include "support/random.h"

using namespace trident;
using namespace trident::test;

TEST_CASE("AdamW matches the double reference over several steps, with bias correction and decoupled decay",
          "[kernels][adamw]") {
  const int64_t n = 1031;
  const cpu::AdamWHyper h{1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f};
  const float grad_scale = 0.5f;  // a clipping coefficient
  auto p = random_normal<float>(n, 1);
  std::vector<float> m(n, 0.0f), v(n, 0.0f);
  auto pd = cast<double>(p);
  std::vector<double> md(n, 0.0), vd(n, 0.0);
  for (int64_t step = 1; step <= 5; ++step) {
    auto g = random_normal<float>(n, 100 + step);
    cpu::adamw_update(p.data(), g.data(), m.data(), v.data(), n, cpu::adamw_step(h, step), grad_scale);
    std::vector<double> gd(n);
    for (int64_t i = 0; i < n; ++i) gd[i] = double(g[i]) * grad_scale;
    reference::adamw_step<double>(pd, gd, md, vd, h.lr, h.beta1, h.beta2, h.eps, h.weight_decay, step);
  }
  check_close("adamw params", p, pd, 1e-5);
  check_close("adamw m", m, md, 1e-5);
  check_close("adamw v", v, vd, 1e-5);
}

TEST_CASE("global grad norm is exact and independent of the thread count; clipping scales to the limit",
          "[kernels][grad_norm]") {
  // Sizes with and without a partial lane group and a partial block, and none at all.
  for (int64_t size : {int64_t(0), int64_t(1), int64_t(15), int64_t(17), int64_t(1 << 14) + 5}) {
    auto x = random_normal<float>(static_cast<std::size_t>(size), 11, 0.5);
    long double naive = 0;
    for (float v : x) naive += static_cast<long double>(v) * v;
    const double got = cpu::squared_norm(x.data(), size);
    INFO("n = " << size);
    CHECK(std::abs(got - static_cast<double>(naive)) <= 1e-13 * static_cast<double>(naive));
  }
  const int64_t n = (1 << 16) + 37;
  auto g = random_normal<float>(n, 7, 0.01);
  double expect = 0;
  for (float x : g) expect += double(x) * x;
  int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  double one = cpu::squared_norm(g.data(), n);
  omp_set_num_threads(2);
  double two = cpu::squared_norm(g.data(), n);
  omp_set_num_threads(saved);
  CHECK(one == two);
  CHECK(std::abs(one - expect) <= 1e-12 * expect);

  const float norm = static_cast<float>(std::sqrt(one));
  const float max_norm = norm / 4;
  float c = clip_coefficient(norm, max_norm);
  cpu::scale(g.data(), n, c);
  CHECK(std::sqrt(cpu::squared_norm(g.data(), n)) == Approx(max_norm).epsilon(1e-5));
  CHECK(clip_coefficient(norm, 2 * norm) == 1.0f);
  CHECK(clip_coefficient(norm, 0.0f) == 1.0f);  // 0 disables clipping
}
