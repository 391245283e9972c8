// CUDA AdamW, squared gradient norm and scaling against the CPU kernels.
// Tolerances:
//   adamw: 1e-6 of the largest magnitude, over five steps. The per-element formula is the shared one
//     (kernels/shared/adamw.h); nvcc contracts multiply-adds into FMAs where the host compiler does not, so results
//     differ by a few ulp.
//   squared_norm: 1e-12 relative. Both sum exact fp32 squares in double, in different block orders.
//     Run twice, it must be bit-identical.
//   scale: exact (one IEEE multiply per element).
#include <cmath>
#include <cstring>

#include <catch2/catch.hpp>

#include "kernels/cpu/adamw.h"
#include "kernels/cpu/grad_norm.h"
#include "kernels/cuda/adamw.h"
#include "kernels/cuda/grad_norm.h"
#include "support/assert_close.h"
#include "support/device_vector.h"
#include "support/random.h"

using namespace trident;
using namespace trident::test;

TEST_CASE("cuda adamw equals the CPU kernel over several steps", "[cuda][adamw]") {
  const int64_t n = GENERATE(int64_t{1}, int64_t{1031}, int64_t{100003});
  CAPTURE(n);
  const cpu::AdamWHyper h{1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f};
  const float grad_scale = 0.7f;  // a clipping coefficient
  auto p = random_normal<float>(n, 1);
  auto m = random_normal<float>(n, 2, 0.1);  // mid-training moments
  auto v = random_uniform<float>(n, 3, 0.0, 0.02);
  DeviceVector<float> p_d(p), m_d(m), v_d(v);
  for (int64_t step = 1; step <= 5; ++step) {
    auto g = random_normal<float>(n, 100 + step);
    const AdamWStep s = cpu::adamw_step(h, step);
    cpu::adamw_update(p.data(), g.data(), m.data(), v.data(), n, s, grad_scale);
    DeviceVector<float> g_d(g);
    cuda::adamw_update(p_d.data(), g_d.data(), m_d.data(), v_d.data(), n, s, grad_scale, nullptr);
  }
  check_close("adamw params", p_d.to_host(), p, 1e-6);
  check_close("adamw m", m_d.to_host(), m, 1e-6);
  check_close("adamw v", v_d.to_host(), v, 1e-6);
}

TEST_CASE("cuda squared_norm equals the CPU kernel and is bit-identical run to run, scale is exact",
          "[cuda][grad_norm]") {
  // one element, one partial block, several blocks, and more than the 1024-block grid covers in one sweep
  const int64_t n = GENERATE(int64_t{1}, int64_t{1000}, int64_t{4097}, int64_t{5000011});
  CAPTURE(n);
  auto g = random_normal<float>(n, 7, 0.01);
  const double expect = cpu::squared_norm(g.data(), n);
  DeviceVector<float> g_d(g);
  const double got = cuda::squared_norm(g_d.data(), n, nullptr);
  CHECK(std::abs(got - expect) <= 1e-12 * expect);
  const double again = cuda::squared_norm(g_d.data(), n, nullptr);
  CHECK(std::memcmp(&got, &again, sizeof got) == 0);

  // accumulation onto a device total, two buffers in call order
  auto h = random_normal<float>(n + 3, 8);
  DeviceVector<float> h_d(h);
  DeviceVector<double> total_d(1, 0.25);
  cuda::squared_norm_accumulate(total_d.data(), g_d.data(), n, nullptr);
  cuda::squared_norm_accumulate(total_d.data(), h_d.data(), n + 3, nullptr);
  const double total_expect = 0.25 + expect + cpu::squared_norm(h.data(), n + 3);
  CHECK(std::abs(total_d.to_host()[0] - total_expect) <= 1e-12 * total_expect);

  const float c = clip_coefficient(static_cast<float>(std::sqrt(expect)), 0.1f);
  cpu::scale(g.data(), n, c);
  cuda::scale(g_d.data(), n, c, nullptr);
  check_close("scale", g_d.to_host(), g, 0.0);

  CHECK(cuda::squared_norm(g_d.data(), 0, nullptr) == 0.0);
}
