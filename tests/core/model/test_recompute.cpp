// train.recompute (core/model/recompute.h): a resident model whose layers keep only their inputs and recompute their
// forward before their backward (full), or recompute their norms' and GELU's outputs (selective), gives the pass's
// losses, gradients and logits of the model that keeps everything, bit for bit, for every attention kind, fp32 and
// bf16, several passes summed; hands its gradient ranges to the grad-ready hook in the same order; and takes what
// its memory_bytes say from its allocator, less than keeping every array.
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
      for (const char* recompute : {"selective", "full"}) {
        for (int64_t layers : {1, 3}) {
          if (std::string(attention) == "hybrid" && layers != 3) continue;
          const ModelConfig config = model_of(attention, layers);
          INFO(attention << ", " << (precision == Precision::bf16 ? "bf16" : "fp32") << ", " << layers << " layers, "
                         << recompute);
          GPT kept(config, 64, test_allocator(), cpu_backend(), precision);
          GPT recomputing(config, 64, test_allocator(), cpu_backend(), precision,
                          resident_model_memory(config, 64, recompute));
          std::optional<RecomputedModel> runner;
          if (std::string(recompute) == "full") runner.emplace(recomputing, test_allocator());
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
    for (const char* recompute : {"none", "selective", "full"}) {
      INFO(recompute);
      GPT model(config, 200, allocator, cpu_backend(), precision, resident_model_memory(config, 200, recompute));
      std::optional<RecomputedModel> runner;
      if (std::string(recompute) == "full") runner.emplace(model, allocator);
      CHECK(static_cast<int64_t>(allocator.in_use()) ==
            resident_memory_bytes(config, 200, precision, Device::cpu, recompute));
    }
    const int64_t kept = GPT::memory_bytes(config, 200, precision, Device::cpu);
    const int64_t selective = resident_memory_bytes(config, 200, precision, Device::cpu, "selective");
    const int64_t full = resident_memory_bytes(config, 200, precision, Device::cpu, "full");
    const int64_t weights = GPT::memory_bytes(config, 0, precision, Device::cpu);
    INFO("kept " << kept << ", selective " << selective << ", full " << full << ", weights " << weights);
    CHECK(full < selective);
    CHECK(selective < kept);
    // 6 layers' saved arrays against 1 layer's and 5 inputs of (200, 24); selective keeps 10 of a layer's 16 C a token
    CHECK(full - weights < (kept - weights) / 2);
    CHECK(selective - weights < (kept - weights) * 3 / 4);
  }
}
