// ATOM's swap executor on one peer: a model several times larger than its device budget trains, sub-model by
// sub-model, bit for bit as the resident model does; the copies overlap the compute.
#include <cstring>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/model/gpt.h"
#include "core/optim/adamw.h"
#include "kernels/common/error.h"
#include "parallel/atom/config.h"
#include "parallel/atom/placement.h"
#include "parallel/atom/swapper.h"
#include "support/assert_close.h"
#include "support/token_batch.h"

using namespace trident;
using namespace trident::test;

namespace {

// hybrid: LLLS repeated, so that a slot holds layers of both kinds in turn
ModelConfig swap_model(const std::string& attention) {
  return {.n_layer = 8, .n_embd = 32, .n_head = 4, .vocab_size = 64, .max_seq_len = 64, .attention = attention,
          .layers = attention == "hybrid" ? "LLLS" : "", .linear_chunk = 8};
}

// The bytes a token of layers 0 .. layers - 1 save for their backward together (a hybrid's linear and softmax layers
// save different arrays).
int64_t moving_bytes_per_token(const ModelConfig& m, Precision precision, int64_t layers) {
  int64_t bytes = 0;
  for (int64_t l = 0; l < layers; ++l) {
    const std::vector<SavedArray> arrays = precision == Precision::bf16 ? saved_arrays(LayerActivations<bf16>{}, m, l)
                                                                        : saved_arrays(LayerActivations<float>{}, m, l);
    for (const SavedArray& a : arrays) bytes += a.bytes_per_token;
  }
  return bytes;
}

struct Steps {
  std::vector<double> losses;
  std::vector<float> params;
};

// `steps` AdamW steps, each over two micro-batches (the second accumulates into the first's gradients).
Steps train(GPT& model, AdamW& optimizer, int steps) {
  TrainConfig hyper;
  const std::vector<OwnedBatch> micro = {make_batch({40, 7, 17}, 64, 1), make_batch({64}, 64, 2)};
  Steps out;
  for (int s = 0; s < steps; ++s) {
    model.zero_grads();
    double loss = 0;
    for (const OwnedBatch& b : micro) loss += model.forward_backward(b.view(), 1.0f / 128);
    out.losses.push_back(loss);
    out.losses.push_back(model.forward_loss(micro[0].view()));  // evaluation between steps
    optimizer.step(model.params(), model.grads(), 1e-3f, 0.5f);
  }
  out.params.assign(model.params(), model.params() + model.num_params());
  return out;
}

// ATOM on the swap model in 8 single-layer sub-models, batches of 512 tokens in one pass.
Config eight_sub_models() {
  Config c;
  c.model = swap_model("softmax");
  c.parallel.strategy = "atom";
  atom_config(c).sub_models = 8;
  c.train.batch_tokens = 512;
  c.train.micro_batches = 1;
  return c;
}

// The device bytes of a pass of 512 tokens through 8 single-layer sub-models in 2 slots.
int64_t single_layer_bytes(const ModelConfig& m, int recomputed, int offloaded) {
  const std::vector<int> starts = balanced_starts(8, 8);
  const Swapping s{.sub_model_starts = starts, .recomputed = recomputed, .offloaded = offloaded};
  return SubModelRunner::memory_bytes(m, 512, Precision::fp32, Device::cpu, s) +
         LayerSwapper::device_bytes(m, starts, 2, Precision::fp32);
}

}  // namespace

TEST_CASE("a model 4x its device budget trains swapped, bit-identical to the resident model", "[atom]") {
  // recomputed: leading sub-models recomputed in backward (all but the last, none, or some); offloaded: leading
  // sub-models whose activations go to the host and back instead
  const auto [attention, precision, starts, slots, recomputed, offloaded] = GENERATE(
      std::tuple{"softmax", Precision::fp32, std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}, 2, 7, 0},
      std::tuple{"linear", Precision::fp32, std::vector<int>{0, 3, 5}, 2, 2, 0},
      std::tuple{"softmax", Precision::bf16, std::vector<int>{0, 2, 4, 6}, 3, 3, 0},
      std::tuple{"linear", Precision::bf16, std::vector<int>{0}, 2, 0, 0},
      std::tuple{"softmax", Precision::fp32, std::vector<int>{0, 2, 3, 6}, 2, 0, 0},
      std::tuple{"linear", Precision::bf16, std::vector<int>{0, 4}, 3, 0, 0},
      std::tuple{"softmax", Precision::fp32, std::vector<int>{0, 2, 3, 6}, 2, 2, 0},
      std::tuple{"linear", Precision::fp32, std::vector<int>{0, 1, 3, 5, 7}, 2, 1, 0},
      std::tuple{"softmax", Precision::fp32, std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}, 2, 0, 7},
      std::tuple{"linear", Precision::bf16, std::vector<int>{0, 2, 4, 6}, 3, 0, 3},
      std::tuple{"linear", Precision::fp32, std::vector<int>{0, 3, 5}, 2, 0, 2},
      std::tuple{"softmax", Precision::bf16, std::vector<int>{0, 1, 3, 5, 7}, 2, 0, 4},
      std::tuple{"softmax", Precision::fp32, std::vector<int>{0, 2, 3, 6}, 2, 0, 1},
      std::tuple{"hybrid", Precision::fp32, std::vector<int>{0, 2, 3, 6}, 2, 2, 0},
      std::tuple{"hybrid", Precision::bf16, std::vector<int>{0, 1, 3, 5, 7}, 2, 0, 4});
  CAPTURE(attention, static_cast<int>(precision), starts.size(), slots, recomputed, offloaded);
  const ModelConfig m = swap_model(attention);
  const int64_t tokens = 64;

  Allocator resident_memory({.name = "resident", .budget_bytes = std::size_t(1) << 30});
  GPT resident(m, tokens, resident_memory, cpu_backend(), precision);
  resident.init_weights(7);
  AdamW resident_adam(resident.layout(), TrainConfig{}, resident_memory);
  const Steps expected = train(resident, resident_adam, 3);

  // The swapped model's device: exactly what its activations, checkpoints, slots and resident part take.
  Allocator host({.name = "host", .budget_bytes = std::size_t(1) << 30});
  const Swapping swapping{
      .sub_model_starts = starts, .store = &host, .recomputed = recomputed, .offloaded = offloaded};
  const int64_t budget = SubModelRunner::memory_bytes(m, tokens, precision, Device::cpu, swapping) +
                         LayerSwapper::device_bytes(m, starts, slots, precision);
  const int64_t resident_bytes =
      GPT::memory_bytes(m, tokens, precision, Device::cpu) + AdamW::memory_bytes(resident.num_params());
  if (starts.size() == 8) CHECK(resident_bytes >= 4 * budget);  // one layer a sub-model: the 4x case
  Allocator device({.name = "device", .budget_bytes = static_cast<std::size_t>(budget)});
  GPT swapped(m, tokens, device, cpu_backend(), precision,
              SubModelRunner::model_memory(m, tokens, swapping));
  SubModelRunner swapped_runner(swapped, swapping, device);
  LayerSwapper swapper(swapped_runner, device, {.slots = slots});
  CHECK(swapped.runs_passes());  // through its runner: it samples as it trains
  swapped.init_weights(7);
  AdamW swapped_adam(swapped.layout(), TrainConfig{}, host);
  const Steps got = train(swapped, swapped_adam, 3);

  REQUIRE(got.losses == expected.losses);  // bit for bit
  REQUIRE(std::memcmp(got.params.data(), expected.params.data(), sizeof(float) * got.params.size()) == 0);
  CHECK(device.peak() <= device.budget());
  CHECK(device.in_use() == static_cast<std::size_t>(budget));  // device_bytes and memory_bytes are exact
  const SwapStats stats = swapper.take_stats();
  CHECK(stats.passes == 3 * 3);
  CHECK(stats.d2h_bytes > 0);
  CHECK(stats.h2d_bytes > 0);
  // the activations of the offloaded sub-models but the last go out and back: 3 steps of two training passes of 64
  // tokens
  const int64_t moving = offloaded > 1 ? starts[static_cast<std::size_t>(offloaded - 1)] : 0;
  CHECK(stats.activation_bytes == 3 * 2 * 64 * moving_bytes_per_token(m, precision, moving) * 2);
  CHECK(host.peak() >= static_cast<std::size_t>(SubModelRunner::offload_bytes(m, tokens, precision, swapping)));
}

TEST_CASE("a step in several passes runs sub-model by sub-model: each sub-model loads once, the gradients those of the "
          "passes one after another", "[atom]") {
  // every sub-model but the last recomputed, or offloaded
  const auto [attention, precision, starts, slots, offload] =
      GENERATE(std::tuple{"softmax", Precision::fp32, std::vector<int>{0, 2, 4, 6}, 2, false},
               std::tuple{"linear", Precision::bf16, std::vector<int>{0, 3, 5}, 3, true},
               std::tuple{"softmax", Precision::bf16, std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}, 2, true},
               std::tuple{"linear", Precision::fp32, std::vector<int>{0, 4}, 2, false},
               std::tuple{"softmax", Precision::fp32, std::vector<int>{0, 2, 3, 6}, 3, true},
               std::tuple{"hybrid", Precision::fp32, std::vector<int>{0, 3, 5}, 2, true});
  CAPTURE(attention, static_cast<int>(precision), starts.size(), slots, offload);
  const ModelConfig m = swap_model(attention);
  const int64_t tokens = 64;  // a pass; a step is three
  const std::vector<OwnedBatch> passes = {make_batch({40, 7, 17}, 64, 1), make_batch({64}, 64, 2),
                                          make_batch({30, 34}, 64, 3)};
  std::vector<TokenBatch> views;
  for (const OwnedBatch& b : passes) views.push_back(b.view());
  const int64_t round_tokens = 3 * tokens;

  Allocator resident_memory({.name = "resident", .budget_bytes = std::size_t(1) << 30});
  GPT resident(m, tokens, resident_memory, cpu_backend(), precision);
  resident.init_weights(7);
  AdamW resident_adam(resident.layout(), TrainConfig{}, resident_memory);

  Allocator host({.name = "host", .budget_bytes = std::size_t(1) << 30});
  const int stashed = static_cast<int>(starts.size()) - 1;
  const Swapping swapping{.sub_model_starts = starts,
                          .store = &host,
                          .recomputed = offload ? 0 : stashed,
                          .offloaded = offload ? stashed : 0,
                          .round_tokens = round_tokens};
  const int64_t budget = SubModelRunner::memory_bytes(m, tokens, precision, Device::cpu, swapping) +
                         LayerSwapper::device_bytes(m, starts, slots, precision);
  Allocator device({.name = "device", .budget_bytes = static_cast<std::size_t>(budget)});
  GPT swapped(m, tokens, device, cpu_backend(), precision,
              SubModelRunner::model_memory(m, tokens, swapping));
  SubModelRunner swapped_runner(swapped, swapping, device);
  LayerSwapper swapper(swapped_runner, device, {.slots = slots});
  swapped.init_weights(7);
  AdamW swapped_adam(swapped.layout(), TrainConfig{}, host);
  CHECK(device.in_use() == static_cast<std::size_t>(budget));  // memory_bytes counts the step's checkpoints

  // One pass loads what a step of three does.
  swapped.zero_grads();
  swapped.forward_backward(std::vector<TokenBatch>{views[0]}, 1.0f / 192);
  const SwapStats one_pass = swapper.take_stats();

  const int64_t wte_begin = resident.layout().wte, wte_end = wte_begin + m.vocab_size * m.n_embd;
  const int64_t P = resident.num_params();
  for (int step = 0; step < 3; ++step) {
    CAPTURE(step);
    resident.zero_grads();
    double expected = 0;
    for (const TokenBatch& view : views) expected += resident.forward_backward(view, 1.0f / 192);
    swapped.zero_grads();
    const double got = swapped.forward_backward(views, 1.0f / 192);
    if (step == 0) {
      // The same forward, and the same gradients but the tied embedding's, which sums every pass's LM-head part
      // before their embedding parts.
      CHECK(got == expected);
      CHECK(std::memcmp(swapped.grads(), resident.grads(), sizeof(float) * wte_begin) == 0);
      CHECK(std::memcmp(swapped.grads() + wte_end, resident.grads() + wte_end, sizeof(float) * (P - wte_end)) == 0);
      check_close("embedding gradient", swapped.grads() + wte_begin, resident.grads() + wte_begin,
                  static_cast<std::size_t>(wte_end - wte_begin), 1e-6);
    }
    CHECK(got == Approx(expected).epsilon(1e-6));
    const SwapStats stats = swapper.take_stats();
    CHECK(stats.passes == 3);
    CHECK(stats.loads == one_pass.loads);
    CHECK(stats.h2d_bytes - stats.activation_bytes / 2 == one_pass.h2d_bytes - one_pass.activation_bytes / 2);
    // every stashed sub-model's activations go out and back, each pass's
    const int64_t per_token = moving_bytes_per_token(m, precision, starts.back());
    CHECK(stats.activation_bytes == (offload ? 2 * round_tokens * per_token : 0));
    resident_adam.step(resident.params(), resident.grads(), 1e-3f, 0.5f);
    swapped_adam.step(swapped.params(), swapped.grads(), 1e-3f, 0.5f);
  }
  for (int64_t i = 0; i < P; ++i) REQUIRE(swapped.params()[i] == Approx(resident.params()[i]).margin(1e-6));
  CHECK(device.peak() <= device.budget());
  if (offload)
    CHECK(host.peak() >= static_cast<std::size_t>(SubModelRunner::offload_bytes(m, tokens, precision, swapping)));

  // A step longer than the checkpoints hold is refused.
  std::vector<TokenBatch> four = views;
  four.push_back(views[0]);
  CHECK_THROWS_WITH(swapped.forward_backward(four, 1.0f), Catch::Contains("exceeds the 192"));
}

TEST_CASE("a slow copy overlaps the compute: each load starts before the previous sub-model's compute ends",
          "[atom]") {
  ModelConfig m = swap_model("softmax");
  m.n_embd = 64;
  const std::vector<int> starts = {0, 2, 4, 6};
  Allocator device({.name = "device", .budget_bytes = std::size_t(1) << 30});
  Allocator host({.name = "host", .budget_bytes = std::size_t(1) << 30});
  const Swapping swapping{.sub_model_starts = starts, .store = &host};
  GPT model(m, 256, device, cpu_backend(), Precision::fp32,
            SubModelRunner::model_memory(m, 256, swapping));
  SubModelRunner model_runner(model, swapping, device);
  model.init_weights(3);
  const OwnedBatch b = make_batch({64, 64, 64, 64}, 64, 5);
  auto timeline_of_step = [&](double copy_bytes_per_s) {
    LayerSwapper swapper(model_runner, device, {.slots = 2, .copy_bytes_per_s = copy_bytes_per_s, .timeline = true});
    model.zero_grads();
    model.forward_backward(b.view(), 1.0f / 256);
    return std::pair{swapper.take_timeline(), swapper.take_stats()};
  };
  auto find = [](const std::vector<CopyEngine::Span>& timeline, const std::string& label) {
    for (const CopyEngine::Span& s : timeline)
      if (s.label == label) return s;
    FAIL("no span " << label);
    return CopyEngine::Span{};
  };
  // A link on which a sub-model's load takes half its forward: slow enough to matter, fast enough to hide.
  const auto [fast, fast_stats] = timeline_of_step(0);
  double forward_s = 0;
  for (int k = 0; k < 4; ++k) {
    const CopyEngine::Span f = find(fast, fmt::format("forward {}", k));
    forward_s += (f.end - f.start) / 4;
  }
  const ModelLayout& layout = model.layout();
  const double sub_model_bytes = 4.0 * static_cast<double>(layout.blocks[2].ln1_w - layout.blocks[0].ln1_w);
  const auto [timeline, stats] = timeline_of_step(sub_model_bytes / (forward_s / 2));
  for (int k = 2; k < 4; ++k) {  // load k is queued when forward k - 1 starts and runs beside it
    CAPTURE(k);
    CHECK(find(timeline, fmt::format("load {}", k)).start < find(timeline, fmt::format("forward {}", k - 1)).end);
  }
  // backward: sub-model 0's load (behind sub-model 2's drain) is queued before sub-model 1's backward starts
  CHECK(find(timeline, "load 0 with gradients").queued < find(timeline, "backward 1").start);
  // exposed: the first loads and the last drain; the other copies hide
  CHECK(stats.exposed_s > 0);
  CHECK(stats.exposed_s < stats.copy_s);
  INFO("step with a fast copy: exposed " << fast_stats.exposed_s << " s; with the slow link: exposed "
                                         << stats.exposed_s << " s of " << stats.copy_s << " s of copies");
}

TEST_CASE("sub-models are balanced with the larger ones last", "[atom]") {
  CHECK(balanced_starts(8, 3) == std::vector<int>{0, 2, 5});
  CHECK(balanced_starts(12, 4) == std::vector<int>{0, 3, 6, 9});
  CHECK(balanced_starts(5, 5) == std::vector<int>{0, 1, 2, 3, 4});
  CHECK(balanced_starts(7, 1) == std::vector<int>{0});
}

TEST_CASE("a pass holds whole documents: the placement counts the passes a batch takes", "[atom]") {
  Config c;
  c.model = swap_model("softmax");  // documents of up to 64 tokens
  c.parallel.strategy = "atom";
  c.train.batch_tokens = 1024;
  c.train.micro_batches = 1;
  // Budgets from too small for one token to a whole batch: where a pass holds more than one document but not a whole
  // number of them, the batch takes the passes its whole documents need, not batch / capacity.
  bool between = false;
  for (double gb = 0.001; gb < 0.1; gb *= 1.03) {
    c.device.memory_gb = gb;
    AtomPlacement p;
    try {
      p = place_atom(c, Precision::fp32, Device::cpu);
    } catch (const ConfigError&) {
      continue;  // below one layer and its buffers
    }
    if (p.tokens >= c.train.batch_tokens) break;
    CHECK(p.pass_tokens <= p.tokens);
    CHECK(p.pass_tokens == (c.train.batch_tokens + p.passes - 1) / p.passes);
    if (p.tokens < 64 || p.tokens % 64 == 0) continue;
    const int64_t per_pass = p.tokens / 64 * 64;
    CHECK(p.passes == (c.train.batch_tokens + per_pass - 1) / per_pass);
    between = true;
  }
  CHECK(between);
  // The whole batch fits a pass: train.micro_batches passes, each a share of the batch.
  c.device.memory_gb = 1;
  c.train.micro_batches = 4;
  const AtomPlacement whole = place_atom(c, Precision::fp32, Device::cpu);
  CHECK(whole.tokens == 1024);
  CHECK(whole.passes == 4);
  CHECK(whole.pass_tokens == 256);
}

TEST_CASE("a batch in several passes runs sub-model by sub-model, in rounds where its checkpoints do not all fit",
          "[atom]") {
  Config c = eight_sub_models();
  c.train.batch_tokens = 512;  // 8 documents of model.max_seq_len 64
  const std::vector<int> starts = balanced_starts(8, 8);
  auto device_bytes = [&](int64_t round_tokens) {  // a pass of one document, recomputing all but the last
    const Swapping s{.sub_model_starts = starts, .recomputed = 7, .round_tokens = round_tokens};
    return SubModelRunner::memory_bytes(c.model, 64, Precision::fp32, Device::cpu, s) +
           LayerSwapper::device_bytes(c.model, starts, 2, Precision::fp32);
  };
  REQUIRE(device_bytes(512) > device_bytes(256));  // the checkpoints of the whole batch, of half of it
  auto place = [&](int64_t budget_bytes) {
    c.device.memory_gb = static_cast<double>(budget_bytes) / static_cast<double>(gib_to_bytes(1));
    return place_atom(c, Precision::fp32, Device::cpu);
  };
  // the whole batch in one round
  const AtomPlacement one_round = place(device_bytes(512));
  CHECK(one_round.round_tokens == 512);
  CHECK(one_round.tokens >= 64);
  CHECK(one_round.passes == 8);
  CHECK(one_round.runs == 1);
  CHECK(one_round.device_bytes <= device_bytes(512));
  // rounds of 4 passes: 2 rounds
  const AtomPlacement rounds = place(device_bytes(512) - 1024);
  CHECK(rounds.round_tokens == 4 * rounds.tokens);
  CHECK(rounds.tokens >= 64);
  CHECK(rounds.runs == (rounds.passes + 3) / 4);
  CHECK(rounds.runs > 1);
  // not even two passes' checkpoints: pass by pass
  const AtomPlacement by_pass = place(device_bytes(128) - 1);
  CHECK(by_pass.round_tokens == 0);
  CHECK(by_pass.tokens >= 64);
  CHECK(by_pass.runs == by_pass.passes);
  CHECK(by_pass.recomputed == 7);
}

TEST_CASE("offload: the fewest leading sub-models that fit move their activations, counted in the host store",
          "[atom]") {
  Config c = eight_sub_models();
  atom_config(c).activations = "offload";
  const std::vector<int> starts = balanced_starts(8, 8);
  auto device_bytes = [&](int offloaded) { return single_layer_bytes(c.model, 0, offloaded); };
  // a budget that holds a pass with 4 sub-models offloaded but not with every layer's activations kept
  c.device.memory_gb = static_cast<double>(device_bytes(4)) / static_cast<double>(gib_to_bytes(1));
  REQUIRE(device_bytes(0) > device_bytes(4));
  const AtomPlacement p = place_atom(c, Precision::fp32, Device::cpu);
  CHECK(p.recomputed == 0);
  CHECK(p.offloaded >= 2);
  CHECK(p.offloaded <= 4);
  CHECK(p.tokens == 512);
  CHECK(p.device_bytes == device_bytes(p.offloaded));
  const Swapping chosen{.sub_model_starts = starts, .offloaded = p.offloaded};
  const int64_t offload_bytes = SubModelRunner::offload_bytes(c.model, 512, Precision::fp32, chosen);
  CHECK(offload_bytes > 0);
  CHECK(p.host_bytes == 16 * model_layout(c.model).num_params + offload_bytes);
  // the same with keep does not fit; auto without a profile recomputes instead
  atom_config(c).activations = "keep";
  CHECK_THROWS_AS(place_atom(c, Precision::fp32, Device::cpu), ConfigError);
  atom_config(c).activations = "auto";
  const AtomPlacement recomputing = place_atom(c, Precision::fp32, Device::cpu);
  CHECK(recomputing.recomputed > 0);
  CHECK(recomputing.offloaded == 0);
  // a host budget that holds the store but not the offloaded activations beside it
  atom_config(c).activations = "offload";
  atom_config(c).host_memory_gb =
      static_cast<double>(p.host_bytes - 1) / static_cast<double>(gib_to_bytes(1));
  try {
    place_atom(c, Precision::fp32, Device::cpu);
    FAIL("a host store without room for the offloaded activations was accepted");
  } catch (const ConfigError& e) {
    CHECK_THAT(e.what(), Catch::Contains("parallel.atom.host_memory_gb") && Catch::Contains("offloaded activations"));
  }
}

TEST_CASE("with a profile, auto takes the placement the swap schedule predicts fastest, in one pass or several",
          "[atom]") {
  Config c = eight_sub_models();
  auto device_bytes = [&](int recomputed, int offloaded) { return single_layer_bytes(c.model, recomputed, offloaded); };
  REQUIRE(device_bytes(0, 7) > device_bytes(7, 0));  // offloading takes a second workspace
  cost::Profile profile;
  profile.compute.emplace();
  profile.compute->alpha2_s_per_token = 1e-4;
  profile.network.emplace();
  auto place = [&](double budget_bytes, double gb_per_s) {
    c.device.memory_gb = budget_bytes / static_cast<double>(gib_to_bytes(1));
    profile.network->host_to_device.emplace();
    profile.network->host_to_device->bandwidth_gb_per_s = gb_per_s;
    return place_atom(c, Precision::fp32, Device::cpu, &profile);
  };
  // A budget just short of a whole batch recomputing: every placement takes two passes or more. On a link far faster
  // than the compute the copies cost nothing and the recompute a third of the step: offloading wins.
  const auto short_of_a_batch = static_cast<double>(device_bytes(7, 0) - 4096);
  const AtomPlacement fast = place(short_of_a_batch, 1e3);
  CHECK(fast.offloaded > 1);
  CHECK(fast.recomputed == 0);
  CHECK(fast.passes > 1);
  CHECK(fast.device_bytes <= static_cast<int64_t>(gib_to_bytes(c.device.memory_gb)));
  // On a link so slow that the copies are the step, no activations on it: recompute.
  const AtomPlacement slow = place(short_of_a_batch, 1e-4);
  CHECK(slow.offloaded == 0);
  CHECK(slow.recomputed > 0);
  CHECK(slow.tokens > fast.tokens);  // one workspace holds more tokens a pass than two
  // Where a pass holds the batch recomputing, several passes offloading still win on the fast link: run sub-model by
  // sub-model, they load each sub-model once, as one pass does, and save the recompute. On the slow link, one pass.
  const AtomPlacement several = place(static_cast<double>(device_bytes(7, 0)), 1e3);
  CHECK(several.passes > 1);
  CHECK(several.offloaded == static_cast<int>(several.sub_model_starts.size()) - 1);
  CHECK(several.round_tokens == 512);
  const AtomPlacement whole = place(static_cast<double>(device_bytes(7, 0)), 1e-4);
  CHECK(whole.passes == 1);
  CHECK(whole.tokens == 512);
  CHECK(whole.round_tokens == 0);
  // Without a profile auto never offloads.
  c.device.memory_gb = short_of_a_batch / static_cast<double>(gib_to_bytes(1));
  CHECK(place_atom(c, Precision::fp32, Device::cpu).offloaded == 0);
}

TEST_CASE("with a profile's measured block costs, the swap schedule takes them per layer, the rest as resident compute",
          "[atom]") {
  Config c = eight_sub_models();  // batches of 512 tokens: 8 documents of model.max_seq_len 64
  c.device.memory_gb = static_cast<double>(single_layer_bytes(c.model, 7, 0)) / static_cast<double>(gib_to_bytes(1));
  cost::Profile profile;
  profile.source = "measured.yaml";
  profile.compute.emplace();
  profile.compute->alpha2_s_per_token = 1e-4;
  profile.network.emplace();
  profile.network->host_to_device = cost::Link{.bandwidth_gb_per_s = 1e-4, .latency_us = 0};  // slow: recompute
  const AtomPlacement shared = place_atom(c, Precision::fp32, Device::cpu, &profile);
  REQUIRE(shared.passes == 1);
  // without measured blocks, the whole model's fit shared by the layers, a forward a third, nothing outside
  CHECK(shared.layers[0].forward_s == Approx(1e-4 * 512 / 8 / 3));
  CHECK(shared.device.resident_compute_s == 0);

  auto fit = [](double alpha1, double alpha2, double beta1) {
    cost::ComputeSection f;
    f.alpha1_s_per_token2 = alpha1, f.alpha2_s_per_token = alpha2, f.beta1_s = beta1;
    return f;
  };
  profile.layers = cost::LayersSection{fit(1e-9, 1e-6, 1e-3), fit(0, 3e-6, 0), fit(0, 5e-6, 2e-3)};
  const AtomPlacement measured = place_atom(c, Precision::fp32, Device::cpu, &profile);
  REQUIRE(measured.passes == 1);
  REQUIRE(measured.recomputed > 0);
  // each document's quadratic term, a call's fixed cost once a pass
  const double forward = 8 * 64 * 64 * 1e-9 + 512 * 1e-6 + 1e-3, backward = 512 * 3e-6, outside = 512 * 5e-6 + 2e-3;
  for (const cost::LayerCost& layer : measured.layers) {
    CHECK(layer.forward_s == Approx(forward));
    CHECK(layer.backward_s == Approx(backward));
  }
  CHECK(measured.device.resident_compute_s == Approx(outside));
  // the predicted compute: every layer's forward and backward, the recomputed layers' forward again, the rest once
  const int recomputed_layers = measured.sub_model_starts[static_cast<std::size_t>(measured.recomputed)];
  CHECK(measured.predicted->compute_s == Approx(8 * (forward + backward) + recomputed_layers * forward + outside));

  // a profile measured on another model is refused, naming the file and both shapes
  profile.model = cost::ModelSection{.name = "other", .n_layer = 12, .n_embd = c.model.n_embd, .bytes_per_value = 4};
  try {
    place_atom(c, Precision::fp32, Device::cpu, &profile);
    FAIL("a profile of another model was accepted");
  } catch (const ConfigError& e) {
    CHECK_THAT(e.what(), Catch::Contains("measured.yaml") && Catch::Contains("12 layers") &&
                             Catch::Contains("model.n_layer"));
  }
  profile.model->n_layer = c.model.n_layer;
  CHECK_NOTHROW(place_atom(c, Precision::fp32, Device::cpu, &profile));
}
