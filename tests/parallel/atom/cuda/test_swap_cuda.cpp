// ATOM's swap executor on the CUDA backend: the host store in pinned memory, each sub-model copied in on the copy
// queue's stream while the compute stream runs the one before it, gradients copied back after the compute that wrote
// them (kernels/cuda/copy_queue.h). Against the resident model on the same backend, from the same weights each step:
// the losses, evaluation losses and gradients. A copy that raced the compute (a slot overwritten while still read, a
// drain before the backward finished) shows as a difference. Built twice: against a real device (label gpu, skipped
// without one), where the bound is 1e-6 because cuBLAS may pick another kernel for a weight at another address
// alignment, and under the SIMT emulation (label simt: streams are deferred queues, so a copy that does not wait for
// the compute it follows reads what was there before), where the same kernels on the same inputs must agree bit for
// bit.
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <catch2/catch.hpp>

#include "core/model/gpt.h"
#include "core/optim/adamw.h"
#include "kernels/cuda/cuda_backend.h"
#include "parallel/atom/swapper.h"
#include "support/assert_close.h"
#include "support/backend_download.h"
#include "support/token_batch.h"

using namespace trident;
using namespace trident::test;

namespace {

#ifdef TRIDENT_SIMT_EMULATION
constexpr double kTolerance = 0;
// The emulation takes ~20 s a case: those marked `emulated` cover fp32 and bf16, softmax and linear, recompute and
// offload, 2 and 3 slots, passes one after another and sub-model by sub-model.
constexpr bool kEveryCase = false;
#else
constexpr double kTolerance = 1e-6;
constexpr bool kEveryCase = true;
#endif

void check_same(const std::string& name, double got, double want) {
  INFO(name << ": " << got << " vs " << want);
  CHECK(std::abs(got - want) <= kTolerance * std::abs(want));
}

}  // namespace

TEST_CASE("a swapped model on the cuda backend equals the resident one bit for bit, step after step",
          "[cuda][atom]") {
  // recomputed or offloaded: leading sub-models whose activations are recomputed, or go to the host and back;
  // sub_model_major: the two micro-batches are one step's passes, run sub-model by sub-model (Swapping::round_tokens)
  const auto [attention, precision, starts, slots, recomputed, offloaded, sub_model_major, emulated] = GENERATE(
      std::tuple{"softmax", Precision::fp32, std::vector<int>{0, 1, 2, 3}, 2, 3, 0, false, false},
      std::tuple{"linear", Precision::fp32, std::vector<int>{0, 2, 3}, 2, 0, 0, false, false},
      std::tuple{"softmax", Precision::bf16, std::vector<int>{0, 2}, 3, 1, 0, false, true},
      std::tuple{"linear", Precision::bf16, std::vector<int>{0, 1, 3}, 2, 2, 0, false, false},
      std::tuple{"linear", Precision::bf16, std::vector<int>{0, 1, 2, 3}, 2, 0, 3, false, true},
      std::tuple{"softmax", Precision::fp32, std::vector<int>{0, 1, 3}, 3, 0, 2, true, true},
      std::tuple{"linear", Precision::bf16, std::vector<int>{0, 2}, 2, 1, 0, true, false},
      std::tuple{"hybrid", Precision::fp32, std::vector<int>{0, 1, 2, 3}, 2, 0, 2, false, true});
  if (!kEveryCase && !emulated) return;
  CAPTURE(attention, static_cast<int>(precision), starts.size(), slots, recomputed, offloaded, sub_model_major);
  const ModelConfig m{.n_layer = 4, .n_embd = 32, .n_head = 2, .vocab_size = 61, .max_seq_len = 32,
                      .attention = attention, .layers = attention == std::string("hybrid") ? "SL" : "",
                      .linear_chunk = 8};  // small: the SIMT emulation is slow
  const int64_t tokens = 64;
  std::unique_ptr<Backend> cuda = cuda::make_cuda_backend(0);

  Allocator resident_memory({.name = "cuda", .budget_bytes = std::size_t(1) << 30, .resource = &cuda->memory()});
  GPT resident(m, tokens, resident_memory, *cuda, precision);

  Allocator store({.name = "host store", .budget_bytes = std::size_t(1) << 30, .resource = &cuda->staging_memory()});
  const Swapping swapping{.sub_model_starts = starts,
                          .store = &store,
                          .recomputed = recomputed,
                          .offloaded = offloaded,
                          .round_tokens = sub_model_major ? 2 * tokens : 0};
  const int64_t budget = SubModelRunner::memory_bytes(m, tokens, precision, Device::cuda, swapping) +
                         LayerSwapper::device_bytes(m, starts, slots, precision);
  Allocator device({.name = "cuda", .budget_bytes = static_cast<std::size_t>(budget), .resource = &cuda->memory()});
  GPT swapped(m, tokens, device, *cuda, precision,
              SubModelRunner::model_memory(m, tokens, swapping));
  SubModelRunner swapped_runner(swapped, swapping, device);
  LayerSwapper swapper(swapped_runner, device, {.slots = slots});
  swapped.init_weights(7);
  AdamW adam(swapped.layout(), TrainConfig{}, store);  // on the host store, as a swapped run's

  const int64_t P = swapped.num_params();
  const std::vector<OwnedBatch> micro = {make_batch({20, 1, 32}, 61, 1), make_batch({32, 9}, 61, 2)};
  const std::vector<TokenBatch> passes = {micro[0].view(), micro[1].view()};
  const int64_t wte_begin = swapped.layout().wte, wte_end = wte_begin + m.vocab_size * m.n_embd;
  for (int step = 0; step < 2; ++step) {
    CAPTURE(step);
    // The resident model starts each step from the swapped model's weights.
    cuda->upload(resident.params(), swapped.params(), sizeof(float) * static_cast<std::size_t>(P));
    resident.zero_grads();
    swapped.zero_grads();
    if (sub_model_major) {  // the same passes, one after another on the resident model
      double want = 0;
      for (const TokenBatch& pass : passes) want += resident.forward_backward(pass, 1.0f / 94);
      check_same("loss", swapped.forward_backward(passes, 1.0f / 94), want);
    } else {
      for (const TokenBatch& pass : passes) {  // the second micro-batch accumulates into the first's gradients
        const double want = resident.forward_backward(pass, 1.0f / 94);
        check_same("loss", swapped.forward_backward(pass, 1.0f / 94), want);
      }
    }
    const std::vector<float> want = download(*cuda, resident.grads(), P);
    auto same = [&](int64_t begin, int64_t end) {  // gradients [begin, end)
      const auto n = static_cast<std::size_t>(end - begin);
      if (kTolerance == 0)
        CHECK(std::memcmp(want.data() + begin, swapped.grads() + begin, sizeof(float) * n) == 0);
      else
        check_close("gradients", swapped.grads() + begin, want.data() + begin, n, kTolerance);
    };
    if (sub_model_major) {  // the tied embedding sums its gradient's parts in another order
      same(0, wte_begin);
      same(wte_end, P);
      check_close("embedding gradient", swapped.grads() + wte_begin, want.data() + wte_begin,
                  static_cast<std::size_t>(wte_end - wte_begin), 1e-6);
    } else {
      same(0, P);
    }
    check_same("evaluation loss", swapped.forward_loss(micro[1].view()), resident.forward_loss(micro[1].view()));
    adam.step(swapped.params(), swapped.grads(), 1e-3f, 0.5f);
  }
  CHECK(device.peak() <= device.budget());
  const SwapStats stats = swapper.take_stats();
  CHECK(stats.passes == 2 * 3);
  CHECK(stats.h2d_bytes > 0);
  CHECK(stats.d2h_bytes > 0);
  // the last offloaded sub-model's stay on the device, unless run sub-model by sub-model
  CHECK((stats.activation_bytes > 0) == (offloaded > (sub_model_major ? 0 : 1)));
}
