// FlexSP training: plans that mix group sizes in one micro-batch equal the single-rank step (softmax and linear
// models with Ulysses inside each group, linear ones with LASP-1 and LASP-2 inside), the groups come from the
// communicators made at start-up, and a plan made for other documents is refused. The [mpi] cases run as a 1-rank world (ctest) and under mpirun with 2 and 4 ranks.
// Checks use CHECK, never REQUIRE, so a rank with a wrong result still joins the collectives that follow.
#include <set>
#include <span>
#include <utility>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "kernels/common/error.h"
#include "parallel/flexsp/config.h"
#include "parallel/flexsp/strategy.h"
#include "parallel/lasp/config.h"
#include "parallel/select/registry.h"
#include "support/assert_close.h"
#include "support/fixtures.h"
#include "support/strategy_fixtures.h"

using namespace trident;
using namespace trident::test;

namespace {

std::vector<int> all_degrees(int world) {
  std::vector<int> d;
  for (int k = 1; k <= world; k *= 2) d.push_back(k);
  return d;
}

}  // namespace

TEST_CASE("a FlexSP step with groups of several sizes equals the single-rank step", "[mpi][flexsp_train]") {
  const int W = world().size();
  if ((W & (W - 1)) != 0) return;  // FlexSP needs a power-of-two world
  struct Case {
    const char* attention;
    FlexInner inner;
    const char* variant;
  };
  for (const Case& k : {Case{"softmax", FlexInner::ulysses, "ring"}, Case{"linear", FlexInner::ulysses, "ring"},
                        Case{"linear", FlexInner::lasp, "ring"}, Case{"linear", FlexInner::lasp, "allgather"}}) {
    const std::string attention = k.attention;
    Config c = tiny_strategy_config(attention, 256);
    lasp_config(c).variant = k.variant;
    const cost::Profile profile = one_node_profile(W);
    RunGroups groups(world(), {}, all_degrees(W));
    // A rank holds 48 tokens: the 90-token document needs a pair (or more), the short ones fit one rank each.
    const StrategyEnv env{groups, cpu_backend(), c, 48, &profile};
    // Micro-batch 0 mixes a pair with single ranks, micro-batch 1 is one group of all ranks (4 ranks); 2 ranks: a
    // pair, then two single ranks; 1 rank: the fast planner's own plan.
    FlexSequenceParallel::Planner mixed_plan;
    if (W > 1)
      mixed_plan = [W](std::span<const int64_t> lengths, const cost::GroupCostModel& cost) {
        using Groups = std::vector<std::pair<int64_t, std::vector<int64_t>>>;
        const std::vector<Groups> micro = W == 4 ? std::vector<Groups>{{{2, {0}}, {1, {1, 3}}, {1, {2}}}, {{4, {4, 5}}}}
                                                 : std::vector<Groups>{{{2, {0}}}, {{1, {1, 3}}, {1, {2, 4, 5}}}};
        flexsp::BatchPlan plan;
        plan.lengths.assign(lengths.begin(), lengths.end());
        for (const Groups& layout : micro) plan.micro_batches.push_back(flexsp::make_micro_batch(layout, lengths, cost));
        return plan;
      };
    FlexSequenceParallel flexsp(env, k.inner, mixed_plan);
    CHECK(flexsp.name() == (k.inner == FlexInner::lasp ? "flexsp-lasp" : "flexsp"));
    GPT model(c.model, 256, test_allocator());
    model.init_weights(3);
    const Batch b = random_documents({W > 1 ? 90 : 40, 30, 20, 12, 8, 5}, 7);
    INFO(attention << (k.inner == FlexInner::lasp ? " with LASP " : " with Ulysses ") << k.variant << " on " << W
                   << " ranks");
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
    check_close_per_tensor("gradient through FlexSP", model.layout(),
                           std::vector<float>(model.grads(), model.grads() + model.num_params()), expected, 1e-5);
    const StepSums eval = flexsp.evaluate(model, b);
    CHECK(eval.loss_sum == Approx(sums.loss_sum).epsilon(1e-5));

    // The plan every rank ran (received from rank 0): each document exactly once, and groups of different sizes
    // side by side in one micro-batch.
    std::multiset<int64_t> placed;
    bool mixed = false;
    for (const flexsp::MicroBatchPlan& mb : flexsp.last_plan().micro_batches) {
      std::set<int64_t> degrees;
      for (const flexsp::GroupPlan& g : mb.groups) {
        degrees.insert(g.degree);
        placed.insert(g.sequences.begin(), g.sequences.end());
      }
      mixed = mixed || degrees.size() > 1;
    }
    CHECK(placed == std::multiset<int64_t>{0, 1, 2, 3, 4, 5});
    // every group size a plan may use has its communicator from start-up: log2(W) + 1 of them, none made since
    CHECK(groups.degrees() == all_degrees(W));
    if (W == 4) CHECK(flexsp.plan_report().layout == "<2, 1x2> <4>");
    if (W == 2) CHECK(flexsp.plan_report().layout == "<2> <1x2>");
    CHECK(mixed == (W == 4));
    CAPTURE(flexsp.plan_report().layout);
    CHECK_FALSE(flexsp.plan_report().layout.empty());
  }
}

TEST_CASE("FlexSP plans the next batch ahead, and falls back to planning on the spot", "[mpi][flexsp_train]") {
  const int W = world().size();
  if ((W & (W - 1)) != 0) return;
  const Config c = tiny_strategy_config("softmax", 256);
  const cost::Profile profile = one_node_profile(W);
  RunGroups groups(world(), {}, all_degrees(W));
  FlexSequenceParallel flexsp({groups, cpu_backend(), c, 48, &profile}, FlexInner::ulysses);
  const Batch first = random_documents({30, 20, 10}, 1), second = random_documents({25, 25}, 2);
  flexsp.prepare(first);
  flexsp.shared_plan(first);
  const FlexSequenceParallel::PlanReport ahead = flexsp.plan_report();
  if (world().rank() == 0) CHECK(ahead.plan_ms >= 0);
  flexsp.shared_plan(second);  // never prepared: planned when needed
  const FlexSequenceParallel::PlanReport late = flexsp.plan_report();
  if (world().rank() == 0) {
    CHECK_FALSE(late.plan_ready);
    CHECK(late.plan_ms >= 0);
  } else {
    CHECK(late.plan_ms == -1);  // only rank 0 plans
  }
  CHECK(flexsp.last_plan().lengths == std::vector<int64_t>{25, 25});
}

TEST_CASE("parallel.flexsp.degrees: single gives every group of a batch one size (BatchAda)", "[mpi][flexsp_train]") {
  const int W = world().size();
  if ((W & (W - 1)) != 0) return;
  Config c = tiny_strategy_config("softmax", 256);
  flexsp_config(c).degrees = "single";
  const cost::Profile profile = one_node_profile(W);
  RunGroups groups(world(), {}, all_degrees(W));
  FlexSequenceParallel flexsp({groups, cpu_backend(), c, 48, &profile}, FlexInner::ulysses);
  const Batch b = random_documents({W > 1 ? 90 : 40, 30, 20, 12, 8, 5}, 7);
  std::set<int64_t> degrees;
  for (const flexsp::MicroBatchPlan& mb : flexsp.shared_plan(b).micro_batches)
    for (const flexsp::GroupPlan& g : mb.groups) degrees.insert(g.degree);
  CHECK(degrees.size() == 1);
  if (W > 1) CHECK(*degrees.begin() >= 2);  // the 90-token document needs two ranks' 48 tokens
}

TEST_CASE("a FlexSP plan made for other documents is refused", "[mpi][flexsp_train]") {
  const int W = world().size();
  if (W == 1 || (W & (W - 1)) != 0) return;  // needs a rank that did not plan
  const Config c = tiny_strategy_config("softmax", 256);
  const cost::Profile profile = one_node_profile(W);
  RunGroups groups(world(), {}, all_degrees(W));
  FlexSequenceParallel flexsp({groups, cpu_backend(), c, 48, &profile}, FlexInner::ulysses);
  // Rank 0 plans its batch; every other rank is handed a batch with one document more.
  const Batch mine = random_documents(world().rank() == 0 ? std::vector<int>{30, 20} : std::vector<int>{30, 20, 5}, 1);
  if (world().rank() == 0) {
    CHECK_NOTHROW(flexsp.shared_plan(mine));
  } else {
    CHECK_THROWS_WITH(flexsp.shared_plan(mine), Catch::Contains("a plan applied to another batch") &&
                                                    Catch::Contains("2 documents") && Catch::Contains("has 3"));
  }
}

TEST_CASE("FlexSP's checks: a power-of-two world; Ulysses inside needs the heads to divide, LASP linear attention",
          "[flexsp_train]") {
  Config c = tiny_strategy_config("softmax", 64);
  CHECK_NOTHROW(check_flexsp(c.model, 4));
  CHECK_THROWS_WITH(check_flexsp(c.model, 6), Catch::Contains("parallel.strategy: 'flexsp'") &&
                                                  Catch::Contains("6 ranks"));
  CHECK_THROWS_WITH(check_flexsp(c.model, 8), Catch::Contains("model.n_head = 4"));
  CHECK_THROWS_WITH(check_flexsp(c.model, 4, FlexInner::lasp),
                    Catch::Contains("parallel.flexsp.inner: 'lasp'") && Catch::Contains("'softmax'"));
  c.parallel.strategy = "flexsp";
  CHECK(run_candidates(c, 4).size() == 1);
  CHECK(candidate_degrees(c, 4) == std::vector<int>{1, 2, 4});
  flexsp_config(c).inner = "lasp";
  CHECK_THROWS_WITH(run_candidates(c, 4), Catch::Contains("parallel.flexsp.inner"));

  // A linear model: LASP inside has no head limit (8 ranks, 4 heads); auto picks it for strategy flexsp and lists
  // both under strategy auto where both can run.
  Config lin = tiny_strategy_config("linear", 64);
  CHECK(configured_flex_inner(lin) == FlexInner::lasp);
  CHECK_NOTHROW(check_flexsp(lin.model, 8, FlexInner::lasp));
  CHECK_THROWS_WITH(check_flexsp(lin.model, 8, FlexInner::ulysses), Catch::Contains("parallel.flexsp.inner: lasp"));
  auto methods = [](const Config& cfg, int world) {
    std::vector<std::string> out;
    for (const CandidateSpec& l : run_candidates(cfg, world))
      if (l.degree == 0) out.push_back(l.method);
    return out;
  };
  CHECK(methods(lin, 4) == std::vector<std::string>{"flexsp", "flexsp-lasp"});
  CHECK(methods(lin, 8) == std::vector<std::string>{"flexsp-lasp"});
  flexsp_config(lin).inner = "ulysses";
  CHECK(methods(lin, 4) == std::vector<std::string>{"flexsp"});
  lin.parallel.strategy = "flexsp";
  CHECK(methods(lin, 4) == std::vector<std::string>{"flexsp"});
  flexsp_config(lin).inner = "auto";
  CHECK(methods(lin, 8) == std::vector<std::string>{"flexsp-lasp"});
}

TEST_CASE("LASP inside a FlexSP group costs a fixed state exchange, Ulysses a share of the group's tokens",
          "[flexsp_train]") {
  const Config lin = tiny_strategy_config("linear", 64);
  Config cfg = lin;
  const cost::GroupCostModel ulysses = flexsp_cost_model(one_node_profile(4), cfg, 100);
  lasp_config(cfg).variant = "lasp1";
  const cost::GroupCostModel chain = flexsp_cost_model(one_node_profile(4), cfg, 100, FlexInner::lasp);
  lasp_config(cfg).variant = "lasp2";
  const cost::GroupCostModel gather = flexsp_cost_model(one_node_profile(4), cfg, 100, FlexInner::lasp);
  lasp_config(cfg).variant = "auto";  // the cheaper on a group of all ranks: one allgather's latency, not three
  CHECK(flexsp_cost_model(one_node_profile(4), cfg, 100, FlexInner::lasp).exchange().kind ==
        cost::GroupExchange::Kind::lasp_allgather);
  // 4 heads of 6: a state is 4 * 4 * 6 * 6 = 576 bytes; 2 layers, a state and its gradient each
  CHECK(chain.exchange().state_bytes == 576);
  const double hop = 20e-6 + 576 / 1e9;
  CHECK(chain.group_overhead_s(4) - ulysses.group_overhead_s(1) == Approx(2 * 2 * 3 * hop));
  CHECK(gather.group_overhead_s(4) - ulysses.group_overhead_s(1) == Approx(2 * 2 * (20e-6 + 3 * 576 / 1e9)));
  // the compute of a sequence is the same; Ulysses adds its all-to-all volume per token, LASP nothing
  CHECK(chain.sequence_s(50, 4) < ulysses.sequence_s(50, 4));
  CHECK(chain.sequence_s(50, 4) == Approx(gather.sequence_s(50, 4)));
  CHECK(chain.group_overhead_s(1) == ulysses.group_overhead_s(1));  // one rank: no exchange
}
