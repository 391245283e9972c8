// CUDA q/k feature map (linear attention) against the CPU kernel, forward and backward, fp32 and bf16.
// Tolerances (max error over the largest reference magnitude):
//   fp32: 1e-6. One exp and a few operations per element; the device's expf and the host polynomial (kernel_exp)
//     differ by a few ulp.
//   bf16: the inputs are rounded to bf16 and the CPU runs on those values; each output is rounded once more on store
//     (half an ulp, 2^-9 of the value): 4e-3. qk_pre is a copy of bf16 values and v is never written: both exact.
#include <string>

#include <catch2/catch.hpp>

#include "kernels/cpu/feature_map.h"
#include "kernels/cuda/feature_map.h"
#include "kernels/shared/bf16.h"
#include "support/assert_close.h"
#include "support/bf16_vectors.h"
#include "support/device_vector.h"
#include "support/random.h"
#include "support/vector_ops.h"

using namespace trident;
using namespace trident::test;

namespace {

template <class T>
void check_feature_map(int64_t N, int C, FeatureMap map, double tol) {
  // both signs and both tails of the maps (silu's minimum near -1.28, elu1's kink at 0)
  const auto qkv0 = from_storage(to_storage<T>(random_normal<float>(N * 3 * C, 30, 3.0)));
  const auto dqkv0 = from_storage(to_storage<T>(random_normal<float>(N * 3 * C, 31)));

  std::vector<float> qkv = qkv0, qk_pre(N * 2 * C), dqkv = dqkv0;
  cpu::feature_map_forward(qkv.data(), qk_pre.data(), N, C, map);
  cpu::feature_map_backward(dqkv.data(), qk_pre.data(), N, C, map);

  DeviceVector<T> qkv_d(to_storage<T>(qkv0)), qk_pre_d(to_storage<T>(std::vector<float>(N * 2 * C, -1.0f)));
  DeviceVector<T> dqkv_d(to_storage<T>(dqkv0));
  cuda::feature_map_forward(qkv_d.data(), qk_pre_d.data(), N, C, map, nullptr);
  cuda::feature_map_backward(dqkv_d.data(), qk_pre_d.data(), N, C, map, nullptr);
  const auto got_qkv = from_storage(qkv_d.to_host()), got_dqkv = from_storage(dqkv_d.to_host());

  CHECK(from_storage(qk_pre_d.to_host()) == qk_pre);  // exact copies of q and k
  CHECK(columns(got_qkv, 3 * C, 2 * C, C) == columns(qkv0, 3 * C, 2 * C, C));    // v untouched
  CHECK(columns(got_dqkv, 3 * C, 2 * C, C) == columns(dqkv0, 3 * C, 2 * C, C));  // dv untouched
  check_close("feature map forward", got_qkv, qkv, tol);
  check_close("feature map backward", got_dqkv, dqkv, tol);
}

}  // namespace

TEST_CASE("cuda feature map forward and backward equal the CPU kernel (silu and elu1, fp32 and bf16)",
          "[cuda][feature_map]") {
  const FeatureMap map = GENERATE(FeatureMap::silu, FeatureMap::elu1);
  // one channel; an odd C; N * 2C = 99990 elements, not a multiple of the block size
  auto [N, C] = GENERATE(std::pair<int64_t, int>{1, 1}, std::pair<int64_t, int>{37, 45},
                         std::pair<int64_t, int>{1111, 45});
  CAPTURE(static_cast<int>(map), N, C);
  SECTION("fp32") { check_feature_map<float>(N, C, map, 1e-6); }
  SECTION("bf16") { check_feature_map<bf16>(N, C, map, 4e-3); }
}
