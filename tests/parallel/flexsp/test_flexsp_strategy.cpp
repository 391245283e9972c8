// FlexSP training: plans that mix group sizes in one micro-batch equal the single-rank step (softmax and linear
// models, Ulysses inside each group), the groups come from the communicators made at start-up, and a plan made for
// other documents is refused. The [mpi] cases run as a 1-rank world (ctest) and under mpirun with 2 and 4 ranks.
// Checks use CHECK, never REQUIRE, so a rank with a wrong result still joins the collectives that follow.
#include <set>
#include <span>
#include <utility>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "kernels/common/error.h"
#include "parallel/flexsp/strategy.h"
#include "parallel/select/registry.h"
#include "support/assert_close.h"
#include "support/fixtures.h"
#include "support/strategy_fixtures.h"

using namespace trident;
using namespace trident::test;

namespace {

// One node of `ranks`.
cost::Profile node_profile(int ranks) {
  return cost::parse_profile(fmt::format(R"(
cluster: {{name: test, nodes: 1, devices_per_node: {}, device_memory_gb: 1}}
network:
  intra_node: {{bandwidth_gb_per_s: 1.0, latency_us: 20}}
  inter_node: {{bandwidth_gb_per_s: 1.0, latency_us: 20}}
compute: {{alpha1_s_per_token2: 1.0e-8, alpha2_s_per_token: 1.0e-4, beta1_s: 1.0e-4}}
)",
                                         ranks),
                             "test profile");
}

std::vector<int> all_degrees(int world) {
  std::vector<int> d;
  for (int k = 1; k <= world; k *= 2) d.push_back(k);
  return d;
}

}  // namespace

TEST_CASE("a FlexSP step with groups of several sizes equals the single-rank step", "[mpi][flexsp_train]") {
  const int W = world().size();
  if ((W & (W - 1)) != 0) return;  // FlexSP needs a power-of-two world
  for (const char* attention : {"softmax", "linear"}) {
    Config c = tiny_strategy_config(attention, 256);
    const cost::Profile profile = node_profile(W);
    RunGroups groups(world(), {}, all_degrees(W));
    // A rank holds 48 tokens: the 90-token document needs a pair (or more), the short ones fit one rank each.
    const StrategyEnv env{groups, cpu_backend(), c, 48, &profile};
    // Micro-batch 0 mixes a pair with single ranks, micro-batch 1 is one group of all ranks (4 ranks); 2 ranks: a
    // pair, then two single ranks; 1 rank: the fast planner's own plan.
    FlexSequenceParallel::Planner mixed_plan;
    if (W > 1)
      mixed_plan = [W](std::span<const int64_t> lengths, const cost::CostModel& cost) {
        using Groups = std::vector<std::pair<int64_t, std::vector<int64_t>>>;
        const std::vector<Groups> micro = W == 4 ? std::vector<Groups>{{{2, {0}}, {1, {1, 3}}, {1, {2}}}, {{4, {4, 5}}}}
                                                 : std::vector<Groups>{{{2, {0}}}, {{1, {1, 3}}, {1, {2, 4, 5}}}};
        flexsp::BatchPlan plan;
        plan.lengths.assign(lengths.begin(), lengths.end());
        for (const Groups& layout : micro) plan.micro_batches.push_back(flexsp::make_micro_batch(layout, lengths, cost));
        return plan;
      };
    FlexSequenceParallel flexsp(env, mixed_plan);
    GPT model(c.model, 256, test_allocator());
    model.init_weights(3);
    const Batch b = random_documents({W > 1 ? 90 : 40, 30, 20, 12, 8, 5}, 7);
    INFO(attention << " on " << W << " ranks");
    CHECK(flexsp.feasible(b).ok == (W > 1 || b.num_tokens() <= 48 * 4));
    int64_t targets = 0;
    for (int32_t t : b.targets) targets += t >= 0;
    const TokenBatch whole{b.tokens.data(), b.targets.data(), b.positions.data(), b.cu_seqlens.data(),
                           b.num_tokens(), b.num_sequences()};
    model.zero_grads();
    const double expected_loss = model.forward_backward(whole, 1.0f / static_cast<float>(targets));
    const std::vector<float> expected(model.grads(), model.grads() + model.num_params());

    model.zero_grads();
    const StepSums sums = flexsp.train(model, b, 1.0f / static_cast<float>(targets));
    CHECK(sums.loss_sum == Approx(expected_loss).epsilon(1e-5));
    CHECK(sums.tokens == b.num_tokens());
    check_close("gradient through FlexSP", std::vector<float>(model.grads(), model.grads() + model.num_params()),
                expected, 1e-5);
    const StepSums eval = flexsp.evaluate(model, b);
    CHECK(eval.loss_sum == Approx(sums.loss_sum).epsilon(1e-5));

    // The plan every rank ran (received from rank 0): each document exactly once, and groups of different sizes
    // side by side in one micro-batch.
    std::multiset<int64_t> placed;
    bool mixed = false;
    for (const flexsp::MicroBatchPlan& mb : flexsp.last_plan().micro_batches) {
      std::set<int64_t> degrees;
      for (const flexsp::Group& g : mb.groups) {
        degrees.insert(g.degree);
        placed.insert(g.sequences.begin(), g.sequences.end());
      }
      mixed = mixed || degrees.size() > 1;
    }
    CHECK(placed == std::multiset<int64_t>{0, 1, 2, 3, 4, 5});
    // every group size a plan may use has its communicator from start-up: log2(W) + 1 of them, none made since
    CHECK(groups.degrees() == all_degrees(W));
    if (W == 4) CHECK(flexsp.last_report().layout == "<2, 1x2> <4>");
    if (W == 2) CHECK(flexsp.last_report().layout == "<2> <1x2>");
    CHECK(mixed == (W == 4));
    CAPTURE(flexsp.last_report().layout);
    CHECK_FALSE(flexsp.last_report().layout.empty());
  }
}

TEST_CASE("FlexSP plans the next batch ahead, and falls back to planning on the spot", "[mpi][flexsp_train]") {
  const int W = world().size();
  if ((W & (W - 1)) != 0) return;
  const Config c = tiny_strategy_config("softmax", 256);
  const cost::Profile profile = node_profile(W);
  RunGroups groups(world(), {}, all_degrees(W));
  FlexSequenceParallel flexsp({groups, cpu_backend(), c, 48, &profile});
  const Batch first = random_documents({30, 20, 10}, 1), second = random_documents({25, 25}, 2);
  flexsp.prepare(first);
  flexsp.shared_plan(first);
  const Strategy::Report ahead = flexsp.last_report();
  if (world().rank() == 0) CHECK(ahead.plan_ms >= 0);
  flexsp.shared_plan(second);  // never prepared: planned when needed
  const Strategy::Report late = flexsp.last_report();
  if (world().rank() == 0) {
    CHECK_FALSE(late.plan_ready);
    CHECK(late.plan_ms >= 0);
  } else {
    CHECK(late.plan_ms == -1);  // only rank 0 plans
  }
  CHECK(flexsp.last_plan().lengths == std::vector<int64_t>{25, 25});
}

TEST_CASE("a FlexSP plan made for other documents is refused", "[mpi][flexsp_train]") {
  const int W = world().size();
  if (W == 1 || (W & (W - 1)) != 0) return;  // needs a rank that did not plan
  const Config c = tiny_strategy_config("softmax", 256);
  const cost::Profile profile = node_profile(W);
  RunGroups groups(world(), {}, all_degrees(W));
  FlexSequenceParallel flexsp({groups, cpu_backend(), c, 48, &profile});
  // Rank 0 plans its batch; every other rank is handed a batch with one document more.
  const Batch mine = random_documents(world().rank() == 0 ? std::vector<int>{30, 20} : std::vector<int>{30, 20, 5}, 1);
  if (world().rank() == 0) {
    CHECK_NOTHROW(flexsp.shared_plan(mine));
  } else {
    CHECK_THROWS_WITH(flexsp.shared_plan(mine), Catch::Contains("a plan applied to another batch") &&
                                                    Catch::Contains("2 documents") && Catch::Contains("has 3"));
  }
}

TEST_CASE("FlexSP's checks: a power-of-two world whose size divides the heads", "[flexsp_train]") {
  Config c = tiny_strategy_config("softmax", 64);
  CHECK_NOTHROW(check_flexsp(c.model, 4));
  CHECK_THROWS_WITH(check_flexsp(c.model, 6), Catch::Contains("parallel.strategy: 'flexsp'") &&
                                                  Catch::Contains("6 ranks"));
  CHECK_THROWS_WITH(check_flexsp(c.model, 8), Catch::Contains("model.n_head = 4"));
  c.parallel.strategy = "flexsp";
  CHECK(candidate_layouts(c, 4).size() == 1);
  CHECK(candidate_degrees(c, 4) == std::vector<int>{1, 2, 4});
}
