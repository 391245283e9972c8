// train.recompute (core/model/recompute.h): a resident model whose layers keep only their inputs and recompute their
// forward before their backward (full), or recompute their norms' and GELU's outputs (selective), gives the pass's
// losses, gradients and logits of the model that keeps everything, bit for bit, for every attention kind, fp32 and
// bf16, several passes summed; hands its gradient ranges to the grad-ready hook in the same order; and takes what
// its memory_bytes say from its allocator, less than keeping every array.
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "core/model/recompute.h"
#include "support/fixtures.h"
#include "support/token_batch.h"

using namespace trident;
using namespace trident::test;

namespace {

ModelConfig model_of(const std::string& attention, int64_t layers) {
  ModelConfig m;
  m.n_layer = layers;
  m.n_embd = 24;
  m.n_head = 3;
  m.vocab_size = 37;
  m.max_seq_len = 32;
  m.attention = attention;
  if (attention == "hybrid") m.layers = "LSL";
  m.linear_chunk = 4;
  return m;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), sizeof(float) * a.size()) == 0;
}

std::vector<float> grads_of(const GPT& model) { return {model.grads(), model.grads() + model.num_params()}; }

}  // namespace

TEST_CASE("a model recomputing its layers trains and evaluates bit for bit as the one keeping them", "[core][model]") {
  for (const char* attention : {"softmax", "linear", "hybrid"}) {
    for (Precision precision : {Precision::fp32, Precision::bf16}) {
      for (const char* recompute : {"selective", "full", "auto"}) {
        for (int64_t layers : {1, 3}) {
          if (std::string(attention) == "hybrid" && layers != 3) continue;
          const ModelConfig config = model_of(attention, layers);
          INFO(attention << ", " << (precision == Precision::bf16 ? "bf16" : "fp32") << ", " << layers << " layers, "
                         << recompute);
          GPT kept(config, 64, test_allocator(), cpu_backend(), precision);
          GPT recomputing(config, 64, test_allocator(), cpu_backend(), precision,
                          resident_model_memory(config, 64, recompute));
          std::optional<RecomputedModel> runner;
          if (std::string(recompute) != "selective") runner.emplace(recomputing, test_allocator(), recompute);
          kept.init_weights(4);
          recomputing.init_weights(4);
          const OwnedBatch a = make_batch({9, 1, 30}, 37, 1), b = make_batch({20, 13, 5}, 37, 2);
          const std::vector<TokenBatch> passes = {a.view(), b.view()};
          std::vector<std::pair<int64_t, int64_t>> kept_order, recomputed_order;
          kept.set_grad_ready_hook([&](int64_t o, int64_t n) { kept_order.emplace_back(o, n); });
          recomputing.set_grad_ready_hook([&](int64_t o, int64_t n) { recomputed_order.emplace_back(o, n); });
          kept.zero_grads();
          recomputing.zero_grads();
          const double kept_loss = kept.forward_backward(passes, 0.01f);
          const double recomputed_loss = recomputing.forward_backward(passes, 0.01f);
          CHECK(kept_loss == recomputed_loss);
          CHECK(same_bits(grads_of(kept), grads_of(recomputing)));
          CHECK(recomputed_order == kept_order);  // each pass: ln_f, the layers last to first, the embeddings
          CHECK(kept_order.size() == 2 * (static_cast<std::size_t>(layers) + 2));
          kept.set_grad_ready_hook({});
          recomputing.set_grad_ready_hook({});
          CHECK(kept.forward_loss(b.view()) == recomputing.forward_loss(b.view()));
          std::vector<float> kept_logits(static_cast<std::size_t>(a.view().num_tokens * config.vocab_size));
          std::vector<float> recomputed_logits(kept_logits.size());
          kept.forward_logits(a.view(), kept_logits.data());
          recomputing.forward_logits(a.view(), recomputed_logits.data());
          CHECK(same_bits(kept_logits, recomputed_logits));
        }
      }
    }
  }
}

TEST_CASE("recomputation keeps what its memory_bytes say: full one layer's arrays and the inputs, selective the "
          "arrays but the norms' and GELU's", "[core][model]") {
  for (Precision precision : {Precision::fp32, Precision::bf16}) {
    const ModelConfig config = model_of("softmax", 6);
    Allocator allocator({.name = "cpu", .budget_bytes = std::size_t(1) << 30});
    for (const char* recompute : {"none", "selective", "full", "auto"}) {
      INFO(recompute);
      GPT model(config, 200, allocator, cpu_backend(), precision, resident_model_memory(config, 200, recompute));
      std::optional<RecomputedModel> runner;
      if (std::string(recompute) == "full" || std::string(recompute) == "auto")
        runner.emplace(model, allocator, recompute);
      CHECK(static_cast<int64_t>(allocator.in_use()) ==
            resident_memory_bytes(config, 200, precision, Device::cpu, recompute));
    }
    const int64_t kept = GPT::memory_bytes(config, 200, precision, Device::cpu);
    const int64_t selective = resident_memory_bytes(config, 200, precision, Device::cpu, "selective");
    const int64_t full = resident_memory_bytes(config, 200, precision, Device::cpu, "full");
    const int64_t as_needed = resident_memory_bytes(config, 200, precision, Device::cpu, "auto");
    CHECK(as_needed >= full);  // the checkpoints beside the activations, aligned as one of their arrays
    CHECK(as_needed < full + 256);
    const int64_t weights = GPT::memory_bytes(config, 0, precision, Device::cpu);
    INFO("kept " << kept << ", selective " << selective << ", full " << full << ", weights " << weights);
    CHECK(full < selective);
    CHECK(selective < kept);
    // 6 layers' saved arrays against 1 layer's and 5 inputs of (200, 24); selective keeps 10 of a layer's 16 C a token
    CHECK(full - weights < (kept - weights) / 2);
    CHECK(selective - weights < (kept - weights) * 3 / 4);
  }
}

TEST_CASE("recomputing as needed recomputes the fewest layers a pass's tokens need, and its gradients stay the model's "
          "own bit for bit", "[core][model]") {
  for (Precision precision : {Precision::fp32, Precision::bf16}) {
    ModelConfig config = model_of("hybrid", 3);
    config.max_seq_len = 96;
    INFO((precision == Precision::bf16 ? "bf16" : "fp32"));
    const int64_t max_tokens = 96;
    const int64_t room = SubModelRunner::as_needed_bytes(config, precision, max_tokens);
    // fewer tokens never need more layers recomputed; the longest pass needs them all but the last (keeping every
    // layer's arrays for max_tokens is more than full recomputation's room)
    int previous = 0;
    for (int64_t n = 1; n <= max_tokens; ++n) {
      const int k = SubModelRunner::layers_recomputed(config, precision, room, n);
      CHECK(k >= previous);
      previous = k;
    }
    CHECK(SubModelRunner::layers_recomputed(config, precision, room, 8) == 0);
    CHECK(SubModelRunner::layers_recomputed(config, precision, room, max_tokens) == 2);
    CHECK_THROWS(SubModelRunner::layers_recomputed(config, precision, room, max_tokens + 1));
    // with room for every layer's arrays, nothing is recomputed; a spare never grows past that
    const int64_t whole = GPT::memory_bytes(config, max_tokens, precision, Device::cpu) -
                          GPT::memory_bytes(config, 0, precision, Device::cpu);
    const int64_t all_the_room = SubModelRunner::as_needed_spare(config, precision, max_tokens, int64_t(1) << 40);
    const int64_t roomy = SubModelRunner::as_needed_bytes(config, precision, max_tokens, all_the_room);
    CHECK(SubModelRunner::layers_recomputed(config, precision, roomy, max_tokens) == 0);
    CHECK(roomy <= whole + 256);
    GPT kept(config, max_tokens, test_allocator(), cpu_backend(), precision);
    GPT recomputing(config, max_tokens, test_allocator(), cpu_backend(), precision,
                    resident_model_memory(config, max_tokens, "auto"));
    RecomputedModel runner(recomputing, test_allocator(), "auto");
    kept.init_weights(7);
    recomputing.init_weights(7);
    // a pass of each depth in turn, and back: the activations carved again each time
    std::vector<int> depths;
    for (const std::vector<int>& lengths : std::vector<std::vector<int>>{{5, 3}, {30, 20, 16}, {90, 6}, {4}, {60}}) {
      const OwnedBatch batch = make_batch(lengths, 37, static_cast<int>(lengths.size()));
      const int64_t n = batch.view().num_tokens;
      INFO(n << " tokens");
      kept.zero_grads();
      recomputing.zero_grads();
      CHECK(kept.forward_backward(std::vector<TokenBatch>{batch.view()}, 0.02f) ==
            recomputing.forward_backward(std::vector<TokenBatch>{batch.view()}, 0.02f));
      CHECK(runner.runner().recomputed_layers() == SubModelRunner::layers_recomputed(config, precision, room, n));
      depths.push_back(runner.runner().recomputed_layers());
      CHECK(same_bits(grads_of(kept), grads_of(recomputing)));
      CHECK(kept.forward_loss(batch.view()) == recomputing.forward_loss(batch.view()));
    }
    CHECK(depths.front() == 0);
    CHECK(depths[2] == 2);
    CHECK(std::find_if(depths.begin(), depths.end(), [](int d) { return d == 1; }) != depths.end());
  }
}
