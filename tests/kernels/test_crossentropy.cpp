#include <catch2/catch.hpp>

#include "kernels/common/error.h"
#include "kernels/cpu/crossentropy.h"
#include "kernels/reference/layers_naive.h"
#include "support/assert_close.h"
#include "support/gradcheck.h"
#include "support/random.h"

using namespace trident;
using namespace trident::test;

TEST_CASE("fused softmax cross-entropy matches the double reference", "[kernels][crossentropy]") {
  const int V = 257;
  std::vector<int32_t> targets = {0, 256, 17, -1, 5, 5, 100};
  const int64_t N = static_cast<int64_t>(targets.size());
  auto logits = random_normal<float>(N * V, 1, 3.0);
  logits[2 * V + 17] = 40.0f;  // a confident row: the log-sum-exp must not overflow
  auto weight = random_uniform<float>(N, 2, 0.1, 1.0);
  auto ld = cast<double>(logits), wd = cast<double>(weight);
  auto expect_loss = reference::crossentropy_forward(ld, targets, V);

  std::vector<float> loss(N, 7.0f);
  cpu::crossentropy_forward(loss.data(), logits.data(), targets.data(), N, V);
  check_close("crossentropy forward", loss, expect_loss, 1e-5);
  CHECK(loss[3] == 0.0f);

  std::vector<float> fused = logits, fused_loss(N);
  cpu::crossentropy_fused_backward(fused_loss.data(), fused.data(), targets.data(), weight.data(), N, V);
  check_close("crossentropy fused loss", fused_loss, expect_loss, 1e-5);
  check_close("crossentropy dlogits", fused, reference::crossentropy_backward(ld, targets, wd, V), 1e-5);
}

TEST_CASE("cross-entropy reference backward matches finite differences", "[kernels][crossentropy]") {
  const int V = 6;
  std::vector<int32_t> targets = {2, -1, 5};
  auto logits = random_normal<double>(targets.size() * V, 3);
  std::vector<double> weight = {0.5, 1.0, 2.0};
  auto loss = [&] { return weighted_sum(reference::crossentropy_forward(logits, targets, V), weight); };
  check_gradient("crossentropy dlogits", loss, logits, reference::crossentropy_backward(logits, targets, weight, V));
}

TEST_CASE("cross-entropy rejects targets outside the vocabulary", "[kernels][crossentropy]") {
  const int V = 4;
  std::vector<int32_t> targets = {1, 4};
  std::vector<float> logits(2 * V), loss(2);
  CHECK_THROWS_WITH(cpu::crossentropy_forward(loss.data(), logits.data(), targets.data(), 2, V),
                    Catch::Contains("target 4 of token 1 is outside the vocabulary [0, 4)"));
  targets[1] = -2;
  std::vector<float> w(2, 1.0f);
  CHECK_THROWS_AS(cpu::crossentropy_fused_backward(loss.data(), logits.data(), targets.data(), w.data(), 2, V),
                  RuntimeError);
}
