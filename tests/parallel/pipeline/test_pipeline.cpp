// Pipeline parallelism (parallel.strategy: pipeline) equals the single-rank step: the GPT's stage seam in one
// process, then the strategy over 1, 2 and 4 ranks (each rank a stage), gradients, losses and whole optimizer steps
// (clipping, AdamW on each stage's own layers, settle: rank 0's parameters). Checks use CHECK, never REQUIRE, so a rank with a wrong result
// still joins the collectives that follow.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/core.h>

#include "app/train/step.h"
#include "parallel/cost/profile.h"
#include "parallel/pipeline/estimate.h"
#include "parallel/pipeline/stages.h"
#include "parallel/pipeline/strategy.h"
#include "support/assert_close.h"
#include "support/fixtures.h"
#include "support/strategy_fixtures.h"

using namespace trident;
using namespace trident::test;

namespace {

Config pipeline_config(const std::string& attention) {
  Config c = tiny_strategy_config(attention, 64);
  c.model.n_layer = 4;  // a stage for each of up to 4 ranks
  c.parallel.strategy = "pipeline";
  c.train.micro_batches = 3;
  c.train.grad_clip = 0.05;  // small enough to clip: the norm must be the whole model's
  return c;
}

TokenBatch view_of(const Batch& b) {
  return {b.tokens.data(), b.targets.data(), b.positions.data(), b.cu_seqlens.data(), b.num_tokens(),
          b.num_sequences()};
}

std::vector<float> slice(const float* values, int64_t offset, int64_t numel) {
  return {values + offset, values + offset + numel};
}

RunGroups& run_groups() {
  static RunGroups groups(world(), {}, {world().size()});
  return groups;
}

}  // namespace

TEST_CASE("pipeline stages split the layers evenly and own every parameter once", "[pipeline]") {
  const Config c = pipeline_config("softmax");
  Config five = c;
  five.model.n_layer = 5;
  const ModelLayout layout = model_layout(five.model);
  for (int stages = 1; stages <= 5; ++stages) {
    INFO(stages << " stages");
    std::vector<int64_t> owned(static_cast<std::size_t>(layout.num_params), 0);
    int next = 0;
    for (int s = 0; s < stages; ++s) {
      const PipelineStage stage = pipeline_stage(five.model, stages, s);
      CHECK(stage.first_layer == next);
      const int layers = stage.end_layer - stage.first_layer;
      CHECK((layers == 5 / stages || layers == 5 / stages + 1));
      next = stage.end_layer;
      for (const auto& [offset, numel] : stage_owns(layout, stage))
        for (int64_t i = offset; i < offset + numel; ++i) ++owned[static_cast<std::size_t>(i)];
      const ParamRanges updates = stage_updates(layout, stage);
      const bool tied_copy = stages > 1 && s == stages - 1;  // the last stage updates wte too
      CHECK(updates.size() == (tied_copy ? 2u : 1u));
      if (tied_copy) CHECK(updates.front() == std::pair<int64_t, int64_t>{layout.wte, layout.params.front().numel});
    }
    CHECK(next == 5);
    CHECK(std::all_of(owned.begin(), owned.end(), [](int64_t n) { return n == 1; }));
  }
  CHECK_THROWS_WITH(check_pipeline(c, 5), Catch::Contains("model.n_layer is 4"));
  Config cuda = c;
  cuda.device.backend = "cuda";
  CHECK_THROWS_WITH(check_pipeline(cuda, 2), Catch::Contains("cpu backend only"));
}

TEST_CASE("the pipeline estimate: compute, fill and drain, and links that pace the micro-batches", "[pipeline]") {
  // 4 nodes x 1 rank, 8 layers of width 64; compute 1e-5 s a token for the whole model, no quadratic term
  auto cost_at = [](double gb_per_s) {
    const cost::Profile profile = cost::parse_profile(fmt::format(R"(
cluster: {{name: test, nodes: 4, devices_per_node: 1, device_memory_gb: 1}}
network:
  intra_node: {{bandwidth_gb_per_s: 10, latency_us: 0}}
  inter_node: {{bandwidth_gb_per_s: {}, latency_us: 0}}
compute: {{alpha1_s_per_token2: 0, alpha2_s_per_token: 1.0e-5, beta1_s: 0}}
)", gb_per_s), "test profile");
    return cost::StepCostModel::from_profile(
        profile, {.world = 4, .nodes = 4, .ranks_per_node = 1, .n_layer = 8, .n_embd = 64, .num_params = 1000,
                  .bytes_per_value = 4});
  };
  Batch doc;  // one micro-batch of 100 tokens
  doc.append_sequence(std::vector<int32_t>(101, 0));
  const std::vector<Batch> micro(6, doc);
  const double stage_s = 100 * 1e-5 / 4;   // a quarter of the layers
  const double hop_bytes = 100.0 * 64 * 4;  // a micro-batch's activations
  const double tied_bytes = 4.0 * 50 * 64;  // vocab 50

  // A fast link: every micro-batch's forward, recompute and backward, the fill and drain, each boundary crossed twice
  // on the fill path, the tied embedding once.
  const cost::StepCostModel fast = cost_at(1000.0);
  const cost::StepEstimate e = pipeline_estimate(micro, 4, 50, 4, fast);
  const double compute_s = (6 + 3) * stage_s * 4 / 3;
  CHECK(e.compute_s == Approx(compute_s));
  CHECK(e.seconds == Approx(compute_s + 2 * 3 * hop_bytes / 1e12 + tied_bytes / 1e12));
  CHECK(e.comm_bytes == static_cast<int64_t>(6 * 2 * hop_bytes + tied_bytes));

  // A link slower than a stage: each micro-batch waits for its message both ways.
  const cost::StepCostModel slow = cost_at(0.001);
  const double hop_s = hop_bytes / 1e6;
  REQUIRE(hop_s > stage_s);
  const cost::StepEstimate paced = pipeline_estimate(micro, 4, 50, 4, slow);
  CHECK(paced.compute_s == Approx(compute_s));
  CHECK(paced.seconds == Approx(6 * 2 * hop_s + 3 * stage_s * 4 / 3 + 2 * 3 * hop_s + tied_bytes / 1e6));
  CHECK(paced.comm_s == Approx(paced.seconds - paced.compute_s));

  // One stage: no links at all.
  const cost::StepEstimate alone = pipeline_estimate(micro, 1, 50, 4, slow);
  CHECK(alone.seconds == Approx(6 * 4 * stage_s * 4 / 3));
  CHECK(alone.comm_bytes == 0);
}

TEST_CASE("a model split into stages computes the whole model's loss and gradients", "[pipeline]") {
  for (const char* attention : {"softmax", "linear"}) {
    INFO(attention);
    const Config c = pipeline_config(attention);
    const Batch b = random_documents({17, 1, 30, 9}, 4);
    const TokenBatch view = view_of(b);
    GPT whole(c.model, 64, test_allocator());
    whole.init_weights(3);
    whole.zero_grads();
    const double loss = whole.forward_backward(view, 0.01f);

    const PipelineStage front{0, 1}, back{1, 4};
    GPT first(c.model, 64, test_allocator(), cpu_backend(), Precision::fp32, stage_memory(front));
    GPT last(c.model, 64, test_allocator(), cpu_backend(), Precision::fp32, stage_memory(back));
    CHECK(GPT::memory_bytes(c.model, 64, Precision::fp32, Device::cpu, stage_memory(back)) <
          GPT::memory_bytes(c.model, 64, Precision::fp32, Device::cpu));  // a stage keeps its layers' activations
    for (GPT* stage : {&first, &last}) {
      std::copy_n(whole.params(), whole.num_params(), stage->params());
      stage->zero_grads();
    }
    const auto N = static_cast<std::size_t>(b.num_tokens() * c.model.n_embd);
    std::vector<float> boundary(N), boundary_grad(N);
    const StageIO forward{.output = boundary.data()};
    CHECK(stage_pass(first, front, view, false, 0.0f, forward) == 0.0);
    const StageIO tail{.input = boundary.data(), .input_grad = boundary_grad.data()};
    CHECK(stage_pass(last, back, view, true, 0.01f, tail) == loss);
    const StageIO head{.output_grad = boundary_grad.data()};
    CHECK(stage_pass(first, front, view, true, 0.01f, head) == 0.0);
    CHECK(stage_pass(last, back, view, false, 0.0f, tail) == whole.forward_loss(view));

    const ModelLayout& layout = whole.layout();
    const int64_t split = layout.blocks[1].ln1_w, wte = layout.params.front().numel;
    // each stage's own layers bit for bit; the tied embedding as the sum of its two halves
    CHECK(slice(first.grads(), wte, split - wte) == slice(whole.grads(), wte, split - wte));
    CHECK(slice(last.grads(), split, layout.num_params - split) ==
          slice(whole.grads(), split, layout.num_params - split));
    std::vector<float> tied = slice(first.grads(), 0, wte);
    for (int64_t i = 0; i < wte; ++i) tied[static_cast<std::size_t>(i)] += last.grads()[i];
    check_close("tied embedding gradient", tied, slice(whole.grads(), 0, wte), 1e-6);
    CHECK_THROWS_WITH(stage_pass(last, back, view, false, 0.0f, {}), Catch::Contains("needs its input"));
    CHECK_THROWS_WITH(stage_pass(first, front, view, true, 0.01f, {}), Catch::Contains("gradient at its output"));
    // a stage's model holds its layers' activations only: it runs no pass of its own (the run samples with a whole
    // model)
    CHECK_FALSE(last.runs_passes());
    CHECK(whole.runs_passes());
    CHECK_THROWS_WITH(last.forward_loss(view), Catch::Contains("runs its passes through its strategy"));
  }
}

TEST_CASE("the pipeline strategy equals the single-rank step", "[mpi][pipeline]") {
  const int W = world().size(), rank = world().rank();
  for (const char* attention : {"softmax", "linear"}) {
    INFO(attention << " over " << W << " stage(s)");
    const Config c = pipeline_config(attention);
    const Batch b = random_documents({17, 1, 30, 9, 40, 3, 12}, 11);  // 112 tokens
    const auto weight = 1.0f / static_cast<float>(b.num_targets());
    const int64_t capacity = 48;  // micro-batches of at most 48 tokens: at least train.micro_batches of them
    // the single rank: the same micro-batches, accumulated in order
    GPT single(c.model, capacity, test_allocator());
    single.init_weights(9);
    single.zero_grads();
    double single_loss = 0;
    for (const Batch& micro : split_within(b, static_cast<int>(c.train.micro_batches), capacity))
      single_loss += single.forward_backward(view_of(micro), weight);

    const PipelineStage layers = pipeline_stage(c.model, W, rank);
    GPT stage(c.model, capacity, test_allocator(), cpu_backend(), Precision::fp32, stage_memory(layers));
    stage.init_weights(9);
    PipelineStrategy pipeline({run_groups(), cpu_backend(), c, capacity});
    CHECK(pipeline.feasible(b).ok);
    stage.zero_grads();
    const StepSums sums = pipeline.train(stage, b, weight);
    CHECK(sums.tokens == static_cast<double>(b.num_tokens()));
    CHECK(sums.loss_sum == Approx(single_loss).epsilon(1e-6));
    for (const auto& [offset, numel] : pipeline.updated_ranges())
      check_close("stage gradient", slice(stage.grads(), offset, numel), slice(single.grads(), offset, numel), 1e-5);
    CHECK(pipeline.squared_grad_norm(stage) ==
          Approx(single.store_backend().squared_norm(single.grads(), single.num_params())).epsilon(1e-5));
    double single_eval = 0;
    for (const Batch& micro : split_within(b, static_cast<int>(c.train.micro_batches), capacity))
      single_eval += single.forward_loss(view_of(micro));
    CHECK(pipeline.evaluate(stage, b).loss_sum == Approx(single_eval).epsilon(1e-6));

    // three whole steps, then settle: rank 0 holds the single rank's parameters, every stage its own layers' and
    // their AdamW state (which a checkpoint's stages write themselves)
    struct OneRank final : Strategy {  // the single rank's step through the same train_step
      std::string name() const override { return "single"; }
      std::string method() const override { return "dp"; }
      int degree() const override { return 1; }
      Feasibility feasible(const Batch&) const override { return {}; }
      cost::StepEstimate estimate(const Batch&, const cost::StepCostModel&) const override { return {}; }
      StepSums train(GPT& model, const Batch& batch, float w) override {
        double loss = 0;
        for (const Batch& micro : split_within(batch, 3, 48)) loss += model.forward_backward(view_of(micro), w);
        return {loss, static_cast<double>(batch.num_targets()), static_cast<double>(batch.num_tokens()), 0};
      }
      StepSums evaluate(GPT&, const Batch&) override { return {}; }
    } one_rank;
    single.init_weights(9);
    stage.init_weights(9);
    AdamW single_adam(single.layout(), c.train, test_allocator()), stage_adam(stage.layout(), c.train,
                                                                               test_allocator());
    for (int step = 0; step < 3; ++step) {
      const Batch batch = random_documents({20, 7, 33, 2, 15}, 100 + static_cast<uint64_t>(step));
      const StepStats expected = train_step(single, single_adam, one_rank, batch, 1e-2, c.train);
      const StepStats got = train_step(stage, stage_adam, pipeline, batch, 1e-2, c.train);
      CHECK(got.loss == Approx(expected.loss).epsilon(1e-6));
      CHECK(got.grad_norm == Approx(expected.grad_norm).epsilon(1e-5));
      CHECK(expected.grad_norm > c.train.grad_clip);  // clipped: the coefficient needs the whole model's norm
    }
    pipeline.settle(stage, stage_adam);
    if (world().rank() == 0)
      check_close("rank 0's parameters after settle", slice(stage.params(), 0, stage.num_params()),
                  slice(single.params(), 0, single.num_params()), 1e-5);
    for (const auto& [offset, numel] : stage_owns(stage.layout(), pipeline_stage(c.model, W, world().rank()))) {
      check_close("this stage's parameters", slice(stage.params(), offset, numel),
                  slice(single.params(), offset, numel), 1e-5);
      check_close("this stage's AdamW m", slice(stage_adam.m(), offset, numel), slice(single_adam.m(), offset, numel),
                  1e-5);
      check_close("this stage's AdamW v", slice(stage_adam.v(), offset, numel), slice(single_adam.v(), offset, numel),
                  1e-5);
    }
  }
}

TEST_CASE("a pipeline given a model without room for its stage's activations refuses to run it", "[mpi][pipeline]") {
  const Config c = pipeline_config("softmax");
  const int W = world().size();
  const PipelineStage mine = pipeline_stage(c.model, W, world().rank());
  const PipelineStage fewer{mine.first_layer, mine.end_layer - 1};  // one layer short
  if (fewer.layers() == 0) return;  // a stage of one layer has no smaller model (tested on 1, 2 and 3 ranks)
  GPT model(c.model, 64, test_allocator(), cpu_backend(), Precision::fp32, stage_memory(fewer));
  PipelineStrategy pipeline({run_groups(), cpu_backend(), c, 64});
  CHECK_THROWS_WITH(pipeline.train(model, random_documents({10}, 1), 0.1f),
                    Catch::Contains("holds the activations of"));
}
