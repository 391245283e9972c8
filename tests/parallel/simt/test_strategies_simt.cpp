// The strategies on the CUDA backend across ranks, in CI: the backend under the SIMT emulation (its streams deferred
// queues, tests/kernels/simt/README.md), its NCCL communicator (parallel/comm/nccl_comm.cpp, unchanged) over the
// emulation's NCCL, which MPI carries. Data parallelism, LASP-1/LASP-2, Ulysses, Ring Attention, FlexSP with groups
// of several sizes and ATOM's exact peers (swapping, their gradients in the host store) give the CPU backend's
// single-rank gradient within 1e-4, and so do layers recomputed before their backward; a sharded optimizer's update all-gathered over NCCL is the unsharded one, bit for bit (the bound of the gpu tests: the
// backends sum in different orders), and so is each rank's range of the gradient stage 2 reduce-scatters during the
// backward. A communicator that did not wait for the compute stream would reduce gradients
// before the backward's kernels have written them, and fail here. Run under mpirun with 1, 2 and 4 ranks; checks use
// CHECK, never REQUIRE, so a rank with a wrong result still joins the collectives that follow.
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "core/model/recompute.h"
#include "kernels/cuda/cuda_backend.h"
#include "parallel/atom/strategy.h"
#include "parallel/atom/swapped_model.h"
#include "parallel/comm/nccl.h"
#include "parallel/flexsp/strategy.h"
#include "parallel/lasp/config.h"
#include "parallel/static_sp/static_sp.h"
#include "parallel/zero/sharding.h"
#include "support/assert_close.h"
#include "support/catch_session.h"
#include "support/fixtures.h"
#include "support/strategy_fixtures.h"

using namespace trident;
using namespace trident::test;

namespace {

Backend* g_cuda = nullptr;     // the emulated device's backend, made in main
RunGroups* g_groups = nullptr;  // every power-of-two degree dividing the world, with NCCL twins

// The gradient of the whole batch on one rank of the CPU backend, scaled as `scale` asks.
std::vector<float> cpu_single_rank_gradient(const Config& c, const Batch& b, int seed, float scale) {
  GPT model(c.model, 256, test_allocator());
  model.init_weights(seed);
  const TokenBatch whole{b.tokens.data(), b.targets.data(), b.positions.data(), b.cu_seqlens.data(), b.num_tokens(),
                         b.num_sequences()};
  model.zero_grads();
  model.forward_backward(whole, scale);
  return {model.grads(), model.grads() + model.num_params()};
}

// `strategy` run on a CUDA model from the same weights: its gradient, downloaded.
std::vector<float> cuda_gradient(Strategy& strategy, const Config& c, const Batch& b, int seed, float scale) {
  Allocator device({.name = "cuda", .budget_bytes = std::size_t(1) << 30, .resource = &g_cuda->memory()});
  GPT model(c.model, 256, device, *g_cuda, Precision::fp32);
  model.init_weights(seed);
  model.zero_grads();
  const StepSums sums = strategy.train(model, b, scale);
  CHECK(sums.tokens == b.num_tokens());
  std::vector<float> grads(static_cast<std::size_t>(model.num_params()));
  g_cuda->download(grads.data(), model.grads(), sizeof(float) * grads.size());
  return grads;
}

float inverse_targets(const Batch& b) {
  int64_t targets = 0;
  for (int32_t t : b.targets) targets += t >= 0;
  return 1.0f / static_cast<float>(targets);
}

}  // namespace

TEST_CASE("every static layout on the CUDA backend over NCCL equals the CPU backend's single rank", "[simt]") {
  struct Layout {
    const char* attention;
    const char* method;
    int degree;
    const char* lasp_variant;
  };
  const int W = world().size();
  for (const Layout& l : {Layout{"softmax", "dp", 1, "ring"}, Layout{"linear", "dp", 1, "ring"},
                          Layout{"linear", "lasp", W, "ring"}, Layout{"linear", "lasp", W, "allgather"},
                          Layout{"linear", "ulysses", 2, "ring"}, Layout{"softmax", "ulysses", W, "ring"},
                          Layout{"softmax", "ring", W, "ring"}, Layout{"softmax", "ring", 2, "ring"},
                          Layout{"hybrid", "lasp2+ring", W, "allgather"}, Layout{"softmax", "usp", W, "ring"}}) {
    if (W % l.degree != 0) continue;
    Config c = tiny_strategy_config(l.attention, 64);
    lasp_config(c).variant = l.lasp_variant;
    if (std::string(l.method) == "usp") c.model.n_head = 2;  // 4 ranks: Ulysses over 2 x Ring over 2
    const Batch b = random_documents({17, 1, 30, 9, 40, 3}, 11);
    const float scale = inverse_targets(b);
    StaticSequenceParallel strategy({*g_groups, *g_cuda, c, 256}, l.method, l.degree);
    INFO(l.attention << " " << strategy.name() << " (" << l.lasp_variant << ") on " << W << " ranks");
    CHECK(strategy.feasible(b).ok);
    check_close_per_tensor("gradient through " + strategy.name() + " on cuda", model_layout(c.model),
                           cuda_gradient(strategy, c, b, 5, scale), cpu_single_rank_gradient(c, b, 5, scale), 1e-4);
  }
}

namespace {

using GroupsOfMicroBatch = std::vector<std::pair<int64_t, std::vector<int64_t>>>;  // (degree, documents) per group

// A FlexSP planner that returns `micro` (for more than one rank; one rank takes the fast planner's own plan).
FlexSequenceParallel::Planner fixed_plan(std::vector<GroupsOfMicroBatch> micro) {
  if (world().size() == 1) return {};
  return [micro](std::span<const int64_t> lengths, const cost::GroupCostModel& cost) {
    flexsp::BatchPlan plan;
    plan.lengths.assign(lengths.begin(), lengths.end());
    for (const GroupsOfMicroBatch& layout : micro)
      plan.micro_batches.push_back(flexsp::make_micro_batch(layout, lengths, cost));
    return plan;
  };
}

}  // namespace

TEST_CASE("FlexSP with groups of several sizes on the CUDA backend equals the CPU backend's single rank", "[simt]") {
  const int W = world().size();
  if ((W & (W - 1)) != 0) return;  // FlexSP needs a power-of-two world
  const cost::Profile profile = one_node_profile(W);
  // 4 ranks: a pair beside two single ranks, then one group of all; 2 ranks: a pair, then two single ranks.
  const FlexSequenceParallel::Planner mixed_plan =
      fixed_plan(W == 4 ? std::vector<GroupsOfMicroBatch>{{{2, {0}}, {1, {1, 3}}, {1, {2}}}, {{4, {4, 5}}}}
                        : std::vector<GroupsOfMicroBatch>{{{2, {0}}}, {{1, {1, 3}}, {1, {2, 4, 5}}}});
  for (const char* attention : {"softmax", "linear"}) {
    const Config c = tiny_strategy_config(attention, 256);
    // A rank holds 48 tokens: the 90-token document needs a group.
    FlexSequenceParallel flexsp({*g_groups, *g_cuda, c, 48, &profile}, FlexInner::ulysses, mixed_plan);
    const Batch b = random_documents({W > 1 ? 90 : 40, 30, 20, 12, 8, 5}, 7);
    const float scale = inverse_targets(b);
    INFO(attention << " FlexSP on " << W << " ranks");
    check_close_per_tensor("gradient through FlexSP on cuda", model_layout(c.model),
                           cuda_gradient(flexsp, c, b, 3, scale), cpu_single_rank_gradient(c, b, 3, scale), 1e-4);
  }
}

// Rank 0 runs a micro-batch the others take no part in, after one it shares with rank 1. Were each rank to reduce
// its gradients during its own last backward, rank 1 would issue the world's all-reduces between its pair's
// all-to-alls while rank 0 issues them after: two NCCL communicators in different orders, which the emulation's one
// NCCL engine a process (as a GPU) cannot run, and reports.
TEST_CASE("FlexSP on NCCL when ranks' last micro-batches differ: gradients reduced after the backward", "[simt]") {
  const int W = world().size();
  if (W != 2 && W != 4) return;
  const cost::Profile profile = one_node_profile(W);
  const FlexSequenceParallel::Planner plan =
      fixed_plan(W == 4 ? std::vector<GroupsOfMicroBatch>{{{2, {0}}, {2, {1}}}, {{1, {2, 3, 4, 5}}}}
                        : std::vector<GroupsOfMicroBatch>{{{2, {0, 1}}}, {{1, {2, 3, 4, 5}}}});
  const Config c = tiny_strategy_config("softmax", 256);
  FlexSequenceParallel flexsp({*g_groups, *g_cuda, c, 64, &profile}, FlexInner::ulysses, plan);
  const Batch b = random_documents({90, 30, 20, 12, 8, 5}, 9);
  const float scale = inverse_targets(b);
  check_close_per_tensor("gradient through FlexSP on cuda", model_layout(c.model),
                         cuda_gradient(flexsp, c, b, 3, scale), cpu_single_rank_gradient(c, b, 3, scale), 1e-4);
}

TEST_CASE("ATOM's exact peers, swapping on the CUDA backend, equal the CPU backend's single rank", "[simt]") {
  const Config c = tiny_strategy_config("softmax", 64);
  const int64_t tokens = 256;
  const std::vector<int> starts{0, 1};  // two sub-models of one layer each
  // The host store in the backend's page-locked memory; the device holds two slots and the resident ends.
  Allocator store({.name = "host store", .budget_bytes = std::size_t(1) << 30,
                   .resource = &g_cuda->staging_memory()});
  const Swapping swapping{.sub_model_starts = starts, .store = &store};
  const int64_t budget = SubModelRunner::memory_bytes(c.model, tokens, Precision::fp32, Device::cuda, swapping) +
                         LayerSwapper::device_bytes(c.model, starts, 2, Precision::fp32);
  Allocator device({.name = "cuda", .budget_bytes = static_cast<std::size_t>(budget),
                    .resource = &g_cuda->memory()});
  GPT model(c.model, tokens, device, *g_cuda, Precision::fp32,
            SubModelRunner::model_memory(c.model, tokens, swapping));
  SwappedRun run(model, swapping, device, {.slots = 2});  // what ATOM's placement attaches
  model.init_weights(5);
  AtomStrategy atom({*g_groups, *g_cuda, c, tokens, nullptr, &run});
  const Batch b = random_documents({17, 1, 30, 9, 40, 3}, 11);
  const float scale = inverse_targets(b);
  model.zero_grads();
  const StepSums sums = atom.train(model, b, scale);
  CHECK(sums.tokens == b.num_tokens());
  // a swapped model's gradients are in the host store
  check_close_per_tensor("gradient of ATOM's peers on cuda", model.layout(),
                         std::vector<float>(model.grads(), model.grads() + model.num_params()),
                         cpu_single_rank_gradient(c, b, 5, scale), 1e-4);
}

TEST_CASE("layers recomputed before their backward on the CUDA backend over NCCL equal the CPU backend's single rank",
          "[simt]") {
  const int W = world().size();
  for (auto [attention, method] : {std::pair{"softmax", "dp"}, std::pair{"softmax", "ulysses"},
                                   std::pair{"linear", "lasp"}}) {
    Config c = tiny_strategy_config(attention, 64);
    c.model.n_layer = 3;
    const Batch b = random_documents({17, 1, 30, 9, 40, 3}, 11);
    const float scale = inverse_targets(b);
    Allocator device({.name = "cuda", .budget_bytes = std::size_t(1) << 30, .resource = &g_cuda->memory()});
    GPT model(c.model, 256, device, *g_cuda, Precision::fp32, resident_model_memory(c.model, 256, "full"));
    RecomputedModel recomputed(model, device);
    model.init_weights(5);
    model.zero_grads();
    const int degree = std::string(method) == "dp" ? 1 : W;
    StaticSequenceParallel strategy({*g_groups, *g_cuda, c, 256}, method, degree);
    INFO(attention << " " << strategy.name() << " on " << W << " ranks, recomputed");
    CHECK(strategy.train(model, b, scale).tokens == b.num_tokens());
    std::vector<float> grads(static_cast<std::size_t>(model.num_params()));
    g_cuda->download(grads.data(), model.grads(), sizeof(float) * grads.size());
    check_close_per_tensor("gradient through " + strategy.name() + " recomputed on cuda", model.layout(), grads,
                           cpu_single_rank_gradient(c, b, 5, scale), 1e-4);
  }
}

TEST_CASE("stage 1 on the CUDA backend over NCCL: each rank's update of its range, all-gathered, is stage 0's step",
          "[simt]") {
  const int W = world().size();
  const Config c = tiny_strategy_config("softmax", 64);
  Allocator device({.name = "cuda", .budget_bytes = std::size_t(1) << 30, .resource = &g_cuda->memory()});
  GPT whole(c.model, 256, device, *g_cuda, Precision::fp32), sharded(c.model, 256, device, *g_cuda, Precision::fp32);
  whole.init_weights(5);
  sharded.init_weights(5);
  Sharding sharding(1, whole.num_params(), g_groups->group(W));
  AdamW whole_optimizer(whole.layout(), c.train, device, *g_cuda);
  AdamW sharded_optimizer(sharded.layout(), c.train, device, *g_cuda, sharding.owned());
  CHECK(sharded_optimizer.size() == shard_ranges(whole.num_params(), W)[static_cast<std::size_t>(world().rank())].numel);
  StaticSequenceParallel strategy({*g_groups, *g_cuda, c, 256}, "dp", 1);
  for (int step = 0; step < 3; ++step) {
    const Batch b = random_documents({17, 1, 30, 9, 40, 3 + step}, 11 + step);
    for (auto [model, optimizer] : {std::pair{&whole, &whole_optimizer}, std::pair{&sharded, &sharded_optimizer}}) {
      model->zero_grads();
      strategy.train(*model, b, inverse_targets(b));
      optimizer->step(model->params(), model->grads(), 1e-2f, 1.0f);
    }
    sharding.gather_parameters(sharded);
  }
  std::vector<float> a(static_cast<std::size_t>(whole.num_params())), b(a.size());
  g_cuda->download(a.data(), whole.params(), sizeof(float) * a.size());
  g_cuda->download(b.data(), sharded.params(), sizeof(float) * b.size());
  INFO(W << " ranks");
  CHECK(std::memcmp(a.data(), b.data(), sizeof(float) * a.size()) == 0);
}

TEST_CASE("stages 2 and 3 on the CUDA backend over NCCL: each rank's range of the gradient, reduce-scattered as the "
          "backward runs (from weights gathered layer by layer at stage 3), is the CPU backend's single rank's",
          "[simt]") {
  const int W = world().size();
  for (const int stage : {2, 3})
  for (const char* method : {"dp", "ulysses"}) {
    Config c = tiny_strategy_config("softmax", 64);
    c.train.micro_batches = 2;  // each pass reduced apart, summed in the shard
    const Batch b = random_documents({17, 1, 30, 9, 40, 21, 8}, 13);
    const float scale = inverse_targets(b);
    const InSource kept = stage == 3 ? InSource::states : InSource::gradients;
    Allocator device({.name = "cuda", .budget_bytes = std::size_t(1) << 30, .resource = &g_cuda->memory()});
    GPT model(c.model, 256, device, *g_cuda, Precision::fp32, resident_model_memory(c.model, 256, "none", kept));
    Sharding sharding(stage, model.num_params(), g_groups->group(W));
    ModelShards source(model, device, sharding.device_group(), sharding.ranges(), nullptr, stage == 3);
    SubModelRunner runner(model, resident_swapping(c.model, "none", kept), device);
    runner.set_source(&source);
    if (stage == 3) source.set_weights(initial_weights(model.layout(), 5, source.owned()).data());
    else model.init_weights(5);
    StaticSequenceParallel strategy({.groups = *g_groups, .backend = *g_cuda, .config = c, .capacity_tokens = 256,
                                     .shards = &source},
                                    method, std::string(method) == "dp" ? 1 : W);
    INFO(strategy.name() << " on " << W << " ranks, stage " << stage);
    model.zero_grads();
    CHECK(strategy.train(model, b, scale).tokens == b.num_tokens());
    const FlatRange mine = sharding.owned();
    std::vector<float> shard(static_cast<std::size_t>(mine.numel));
    g_cuda->download(shard.data(), source.grads(), sizeof(float) * shard.size());
    const std::vector<float> expected = cpu_single_rank_gradient(c, b, 5, scale);
    std::vector<float> grads = expected;  // outside this rank's range: the expected values, so only the range counts
    std::copy(shard.begin(), shard.end(), grads.begin() + mine.offset);
    check_close_per_tensor(fmt::format("stage {}'s range of the gradient through {} on cuda", stage, strategy.name()),
                           model.layout(), grads, expected, 1e-4);
  }
}

int main(int argc, char** argv) {
  CatchSession session(argc, argv);
  if (session.parse_error() != 0) return session.parse_error();
  if (session.only_lists()) return session.run();
  std::unique_ptr<Backend> backend = cuda::make_cuda_backend(0);  // every rank on the one emulated device
  std::vector<int> degrees;
  for (int d = 1; d <= world().size(); d *= 2)
    if (world().size() % d == 0) degrees.push_back(d);
  auto groups = std::make_unique<RunGroups>(
      world(), [&](Communicator& host) { return make_nccl_communicator(host, 0, cuda::compute_stream(*backend)); },
      degrees);
  g_cuda = backend.get();
  g_groups = groups.get();
  const int result = session.run();
  g_groups = nullptr;
  g_cuda = nullptr;
  groups.reset();  // the NCCL communicators go before the backend and before MPI is finalised
  return result;
}
