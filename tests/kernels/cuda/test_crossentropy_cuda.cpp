// CUDA cross-entropy against the CPU kernel on the same data: forward losses, fused backward losses and dlogits, with
// -1 targets (loss 0, zero gradient row), targets at both ends of the vocabulary, a confident row, and vocabularies
// below, just above and far above the block size (GPT-2's 50257 is not a multiple of anything).
// Tolerances (max error normalised by max |reference|):
//   losses (fp32, from fp32 or bf16 logits)  1e-5  fp32 on both sides; the online (max, sum) is merged across threads
//                                                  in another order than the CPU's two passes, and device expf and the
//                                                  host's kernel_exp differ by an ulp or two.
//   dlogits fp32                             1e-5  the same arithmetic.
//   dlogits bf16                             4e-3  one rounding of each gradient to bf16 (2^-9 relative).
// The bf16 runs start from logits rounded to bf16, and the CPU runs on the same rounded values.
#include <cmath>
#include <string>

#include <catch2/catch.hpp>

#include "kernels/common/error.h"
#include "kernels/cpu/crossentropy.h"
#include "kernels/cuda/crossentropy.h"
#include "kernels/shared/bf16.h"
#include "support/assert_close.h"
#include "support/bf16_vectors.h"
#include "support/device_vector.h"
#include "support/random.h"

using namespace trident;
using namespace trident::test;

namespace {

// The gradient rows of tokens without a target are exactly zero.
void check_zero_rows(const std::string& name, const std::vector<float>& dlogits, const std::vector<int32_t>& targets,
                     int V) {
  for (std::size_t t = 0; t < targets.size(); ++t) {
    if (targets[t] != -1) continue;
    bool all_zero = true;
    for (int i = 0; i < V; ++i) all_zero = all_zero && dlogits[t * V + i] == 0.0f;
    INFO(name << ": row " << t);
    CHECK(all_zero);
  }
}

void check_crossentropy(int V, std::vector<int32_t> targets, uint64_t seed) {
  const std::string name = "crossentropy V=" + std::to_string(V) + " N=" + std::to_string(targets.size());
  const int64_t N = static_cast<int64_t>(targets.size());
  auto logits = random_normal<float>(N * V, seed, 3.0);
  if (N > 1 && targets[1] >= 0) logits[1 * V + targets[1]] = 40.0f;  // a confident row: exp must not overflow
  const auto weight = random_uniform<float>(N, seed + 1, 0.1, 1.0);

  for (bool bf16_logits : {false, true}) {
    const std::string run = name + (bf16_logits ? " bf16" : " fp32");
    const std::vector<float> x = bf16_logits ? to_f32(to_bf16(logits)) : logits;
    std::vector<float> loss(N, 7.0f), fused_loss(N, 7.0f), dlogits = x;
    cpu::crossentropy_forward(loss.data(), x.data(), targets.data(), N, V);
    cpu::crossentropy_fused_backward(fused_loss.data(), dlogits.data(), targets.data(), weight.data(), N, V);

    DeviceVector<int32_t> targets_d(targets);
    DeviceVector<float> weight_d(weight), loss_d(N, 7.0f), fused_loss_d(N, 7.0f);
    std::vector<float> loss_h, fused_loss_h, dlogits_h;
    if (bf16_logits) {
      DeviceVector<bf16> x_d(to_bf16(x)), dx_d(to_bf16(x));
      cuda::crossentropy_forward(loss_d.data(), x_d.data(), targets_d.data(), N, V, nullptr);
      cuda::crossentropy_fused_backward(fused_loss_d.data(), dx_d.data(), targets_d.data(), weight_d.data(), N, V,
                                        nullptr);
      dlogits_h = to_f32(dx_d.to_host());
      check_close(run + " logits untouched by forward", to_f32(x_d.to_host()), x, 0.0);
    } else {
      DeviceVector<float> x_d(x), dx_d(x);
      cuda::crossentropy_forward(loss_d.data(), x_d.data(), targets_d.data(), N, V, nullptr);
      cuda::crossentropy_fused_backward(fused_loss_d.data(), dx_d.data(), targets_d.data(), weight_d.data(), N, V,
                                        nullptr);
      dlogits_h = dx_d.to_host();
      check_close(run + " logits untouched by forward", x_d.to_host(), x, 0.0);
    }
    loss_h = loss_d.to_host();
    fused_loss_h = fused_loss_d.to_host();
    check_close(run + " forward loss", loss_h, loss, 1e-5);
    check_close(run + " fused loss", fused_loss_h, fused_loss, 1e-5);
    check_close(run + " dlogits", dlogits_h, dlogits, bf16_logits ? 4e-3 : 1e-5);
    check_zero_rows(run + " dlogits", dlogits_h, targets, V);
    for (int64_t t = 0; t < N; ++t) {
      if (targets[t] != -1) continue;
      CHECK(loss_h[t] == 0.0f);
      CHECK(fused_loss_h[t] == 0.0f);
    }
  }
}

}  // namespace

TEST_CASE("cuda cross-entropy forward and fused backward equal the CPU kernel (fp32, bf16)", "[cuda][crossentropy]") {
  check_crossentropy(50257, {0, 50256, 17, -1, 31337, -1, 5}, 1);  // GPT-2 vocabulary, not a multiple of the block
  check_crossentropy(513, {512, 3, -1, 0}, 2);                     // one element more than the block
  check_crossentropy(7, {6, -1, 0}, 3);                            // fewer elements than threads
  check_crossentropy(1000, {999}, 4);                              // one token
  check_crossentropy(100, {-1, -1}, 5);                            // no targets at all
}

TEST_CASE("cuda cross-entropy rejects targets outside the vocabulary like the CPU kernel", "[cuda][crossentropy]") {
  const int V = 300;
  const int64_t N = 4;
  std::vector<int32_t> targets = {1, 300, 2, -2};  // tokens 1 and 3 are bad; the error names the first
  const auto logits = random_normal<float>(N * V, 6);
  DeviceVector<int32_t> targets_d(targets);
  DeviceVector<float> loss_d(N, 7.0f), x_d(logits), weight_d(N, 1.0f);
  CHECK_THROWS_WITH(cuda::crossentropy_forward(loss_d.data(), x_d.data(), targets_d.data(), N, V, nullptr),
                    Catch::Contains("target 300 of token 1 is outside the vocabulary [0, 300)"));
  auto loss = loss_d.to_host();  // bad rows are NaN, valid rows still computed
  CHECK(std::isnan(loss[1]));
  CHECK(std::isnan(loss[3]));
  CHECK(std::isfinite(loss[0]));
  CHECK(std::isfinite(loss[2]));

  CHECK_THROWS_AS(cuda::crossentropy_fused_backward(loss_d.data(), x_d.data(), targets_d.data(), weight_d.data(), N,
                                                    V, nullptr),
                  RuntimeError);
  const auto dx = x_d.to_host();
  CHECK(std::isnan(dx[1 * V]));
  CHECK(std::isnan(dx[3 * V + V - 1]));
  CHECK(std::isfinite(dx[0]));
}
