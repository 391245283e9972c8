#include <cmath>
#include <string>

#include <catch2/catch.hpp>

#include "kernels/cpu/feature_map.h"
#include "kernels/reference/elementwise_naive.h"
#include "support/assert_close.h"
#include "support/gradcheck.h"
#include "support/random.h"
#include "support/vector_ops.h"

using namespace trident;
using namespace trident::test;

namespace {

struct MapCase {
  FeatureMap map;
  const char* name;
  double (*f)(double);
  double (*grad)(double);
};

const MapCase kSilu{FeatureMap::silu, "silu", reference::silu<double>, reference::silu_grad<double>};
const MapCase kElu1{FeatureMap::elu1, "elu1", reference::elu1<double>, reference::elu1_grad<double>};

}  // namespace

TEST_CASE("feature map forward and backward match the double reference on the q and k columns only",
          "[kernels][feature_map]") {
  const MapCase m = GENERATE(kSilu, kElu1);
  auto [N, C] = GENERATE(std::pair<int64_t, int>{1, 1}, std::pair<int64_t, int>{37, 48});
  CAPTURE(m.name, N, C);
  // both signs (silu's minimum near -1.28, elu1's kink at 0) and, in q, 0 and both tails
  auto qkv = random_normal<float>(N * 3 * C, 1, 3.0);
  qkv[0] = 0.0f;
  if (C > 1) {
    qkv[1] = -30.0f;
    qkv[2] = 30.0f;
  }
  const auto qkv0 = qkv;
  std::vector<float> qk_pre(N * 2 * C, -1.0f);
  cpu::feature_map_forward(qkv.data(), qk_pre.data(), N, C, m.map);

  // qk_pre holds q|k exactly as they were; v is untouched, bit for bit
  CHECK(qk_pre == columns(qkv0, 3 * C, 0, 2 * C));
  CHECK(columns(qkv, 3 * C, 2 * C, C) == columns(qkv0, 3 * C, 2 * C, C));
  const auto qkvd = cast<double>(qkv0);
  check_close(std::string(m.name) + " forward", qkv, reference::map_qk(qkvd, C, m.f), 1e-6);

  // backward rescales dq, dk in place by map'(pre-activation) and leaves dv alone
  auto dqkv = random_normal<float>(N * 3 * C, 2);
  const auto dqkv0 = dqkv;
  cpu::feature_map_backward(dqkv.data(), qk_pre.data(), N, C, m.map);
  CHECK(columns(dqkv, 3 * C, 2 * C, C) == columns(dqkv0, 3 * C, 2 * C, C));
  check_close(std::string(m.name) + " backward", dqkv, reference::map_qk_backward(cast<double>(dqkv0), qkvd, C, m.grad),
              1e-6);
}

TEST_CASE("feature map none copies q and k to qk_pre and changes nothing", "[kernels][feature_map]") {
  const int64_t N = 5;
  const int C = 7;
  auto qkv = random_normal<float>(N * 3 * C, 3), dqkv = random_normal<float>(N * 3 * C, 4);
  const auto qkv0 = qkv, dqkv0 = dqkv;
  std::vector<float> qk_pre(N * 2 * C);
  cpu::feature_map_forward(qkv.data(), qk_pre.data(), N, C, FeatureMap::none);
  cpu::feature_map_backward(dqkv.data(), qk_pre.data(), N, C, FeatureMap::none);
  CHECK(qkv == qkv0);
  CHECK(dqkv == dqkv0);
  CHECK(qk_pre == columns(qkv0, 3 * C, 0, 2 * C));
}

TEST_CASE("feature map reference derivatives match finite differences", "[kernels][feature_map]") {
  const MapCase m = GENERATE(kSilu, kElu1);
  CAPTURE(m.name);
  const int64_t N = 3;
  const int C = 4;
  // away from elu1's kink at 0, where its second derivative jumps (1 is continuous, central differences lose an order)
  auto qkv = random_normal<double>(N * 3 * C, 5, 2.0);
  for (double& x : qkv)
    if (std::abs(x) < 1e-3) x = 0.5;
  const auto dy = random_normal<double>(N * 3 * C, 6);
  check_gradient(std::string(m.name) + " dqkv", [&] { return weighted_sum(reference::map_qk(qkv, C, m.f), dy); }, qkv,
                 reference::map_qk_backward(dy, qkv, C, m.grad));
}
