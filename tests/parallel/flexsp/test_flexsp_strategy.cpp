// FlexSP training: plans that mix group sizes in one micro-batch equal the single-rank step (softmax and linear
// models with Ulysses inside each group, linear ones with LASP-1 and LASP-2 inside), the groups come from the
// communicators made at start-up, and a plan made for other documents is refused. The [mpi] cases run as a 1-rank world (ctest) and under mpirun with 2 and 4 ranks.
// Checks use CHECK, never REQUIRE, so a rank with a wrong result still joins the collectives that follow.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <numeric>
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
#include "parallel/select/selector.h"
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

// A FlexSP checkpoint state whose corrections (learned and for the next plan) are `ratios` (degree -> ratio), one
// node.
nlohmann::json state_with(const std::map<int64_t, double>& ratios) {
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& [d, r] : ratios) groups.push_back({{"degree", d}, {"nodes", 1}, {"ratio", r}, {"steps", 1}});
  const nlohmann::json corrections = {{"steps_seen", 2}, {"groups", groups}};
  return {{"corrections", corrections}, {"next_plan", corrections}};
}

std::set<int64_t> degrees_of(const flexsp::BatchPlan& plan) {
  std::set<int64_t> d;
  for (const flexsp::MicroBatchPlan& mb : plan.micro_batches)
    for (const flexsp::GroupPlan& g : mb.groups) d.insert(g.degree);
  return d;
}

// TRIDENT_TEST_FLEXSP_SLOWDOWN set for one scope.
struct Slowdown {
  explicit Slowdown(const char* value) { setenv("TRIDENT_TEST_FLEXSP_SLOWDOWN", value, 1); }
  ~Slowdown() { unsetenv("TRIDENT_TEST_FLEXSP_SLOWDOWN"); }
};

}  // namespace

TEST_CASE("a FlexSP step with groups of several sizes equals the single-rank step", "[mpi][flexsp_train]") {
  const int W = world().size();
  if ((W & (W - 1)) != 0) return;  // FlexSP needs a power-of-two world
  struct Case {
    const char* attention;
    FlexInner inner;
    const char* variant;
    int heads = 4;
  };
  // A hybrid's softmax layers run Ulysses in every group (4 heads), USP in the groups larger than the head count
  // (2 heads: the group of 4 ranks, Ulysses over pairs x Ring over 2), or Ring Attention (3 heads: no Ulysses
  // degree divides them).
  for (const Case& k : {Case{"softmax", FlexInner::ulysses, "ring"}, Case{"linear", FlexInner::ulysses, "ring"},
                        Case{"linear", FlexInner::lasp, "ring"}, Case{"linear", FlexInner::lasp, "allgather"},
                        Case{"hybrid", FlexInner::lasp, "allgather"}, Case{"hybrid", FlexInner::lasp, "ring", 2},
                        Case{"hybrid", FlexInner::lasp, "allgather", 3}}) {
    const std::string attention = k.attention;
    Config c = tiny_strategy_config(attention, 256);
    c.model.n_head = k.heads;
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
                   << " ranks, " << k.heads << " heads");
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

  // A hybrid: LASP inside by default, its softmax layers beside it taking Ring where the heads do not divide.
  Config hybrid = tiny_strategy_config("hybrid", 64);
  CHECK(configured_flex_inner(hybrid) == FlexInner::lasp);
  CHECK_NOTHROW(check_flexsp(hybrid.model, 8, FlexInner::lasp));
  CHECK(methods(hybrid, 8) == std::vector<std::string>{"flexsp-lasp"});
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
  // train.recompute: full: the forward of 1 of the 2 layers again, a sixth more compute, the exchange the same
  Config recomputing = lin;
  recomputing.train.recompute = "full";
  const cost::GroupCostModel again = flexsp_cost_model(one_node_profile(4), recomputing, 100, FlexInner::lasp);
  CHECK(again.sequence_s(50, 4) == Approx(chain.sequence_s(50, 4) * (1 + 1.0 / 6)));
  CHECK(again.group_overhead_s(4) == Approx(chain.group_overhead_s(4)));
}

TEST_CASE("a hybrid's FlexSP group pays LASP's states in its linear layers, Ulysses, USP or Ring in its softmax "
          "layers", "[flexsp_train]") {
  Config lin = tiny_strategy_config("linear", 64), hybrid = tiny_strategy_config("hybrid", 64);  // LS: one of each
  lasp_config(lin).variant = lasp_config(hybrid).variant = "lasp2";
  const cost::Profile profile = one_node_profile(4);  // 20 us, 1 GB/s
  // the compute of a sequence and Ulysses' all-to-all volume (16 all-to-alls: 2 layers) are the same for both
  const double compute = flexsp_cost_model(profile, lin, 100, FlexInner::lasp).sequence_s(50, 4);
  const double ulysses = flexsp_cost_model(profile, lin, 100).sequence_s(50, 4) - compute;
  const cost::GroupCostModel beside_ulysses = flexsp_cost_model(profile, hybrid, 100, FlexInner::lasp);
  CHECK(beside_ulysses.exchange().softmax_layers == 1);
  // one linear layer's state allgathered forward and backward (4 heads of 6: 576 bytes), one softmax layer's 8
  // all-to-alls, each moving its share of the tokens
  CHECK(beside_ulysses.group_overhead_s(4) - beside_ulysses.group_overhead_s(1) ==
        Approx(2 * (20e-6 + 3 * 576 / 1e9) + 8 * 20e-6));
  CHECK(beside_ulysses.sequence_s(50, 4) - compute == Approx(ulysses / 2));
  // 2 heads: a group of 4 (one node) runs USP in the softmax layer, Ulysses over pairs (8 all-to-alls) and a ring of
  // 2 (3r - 2 = 4 passes of K and V, 2 all-to-alls' volume each); a group of 2 still runs Ulysses
  hybrid.model.n_head = 2;
  const cost::GroupCostModel beside_usp = flexsp_cost_model(profile, hybrid, 100, FlexInner::lasp);
  CHECK(beside_usp.group_overhead_s(4) - beside_usp.group_overhead_s(1) ==
        Approx(2 * (20e-6 + 3 * 1152 / 1e9) + 8 * 20e-6 + 4 * 20e-6));
  CHECK(beside_usp.sequence_s(50, 4) - compute == Approx(ulysses / 16 * (8 + 4 * 2)));
  CHECK(beside_usp.sequence_s(50, 2) == Approx(beside_ulysses.sequence_s(50, 2)));
  // 3 heads: no Ulysses degree divides them: Ring Attention alone, 3d - 2 = 10 passes on 4 devices
  hybrid.model.n_head = 3;
  const cost::GroupCostModel beside_ring = flexsp_cost_model(profile, hybrid, 100, FlexInner::lasp);
  CHECK(beside_ring.group_overhead_s(4) - beside_ring.group_overhead_s(1) ==
        Approx(2 * (20e-6 + 3 * 768 / 1e9) + 10 * 20e-6));
  CHECK(beside_ring.sequence_s(50, 4) - compute == Approx(ulysses / 16 * 20));
}

TEST_CASE("FlexSP planned under corrections still gives the single-rank step", "[mpi][flexsp_train]") {
  const int W = world().size();
  if (W == 1 || (W & (W - 1)) != 0) return;  // one rank has one degree: nothing to correct between
  const Config c = tiny_strategy_config("softmax", 256);
  const cost::Profile profile = one_node_profile(W);
  RunGroups groups(world(), {}, all_degrees(W));
  const Batch b = random_documents({90, 30, 20, 12, 8, 5}, 7);
  int64_t targets = 0;
  for (int32_t t : b.targets) targets += t >= 0;
  GPT model(c.model, 256, test_allocator());
  model.init_weights(3);
  const TokenBatch whole{b.tokens.data(), b.targets.data(), b.positions.data(), b.cu_seqlens.data(),
                         b.num_tokens(), b.num_sequences()};
  model.zero_grads();
  const double expected_loss = model.forward_backward(whole, 1.0f / static_cast<float>(targets));
  const std::vector<float> expected(model.grads(), model.grads() + model.num_params());
  // Single ranks measured 50x slower than estimated force one degree for every group (BatchAda's plan, or the same
  // layout found by the mixed planner); groups of all ranks 50x slower (4 ranks) keep every group smaller, where
  // uncorrected one group of 4 runs the batch fastest.
  std::vector<std::map<int64_t, double>> cases = {{{1, 50.0}, {2, 1.0}, {W, 1.0}}};
  if (W == 4) cases.push_back({{1, 1.0}, {2, 1.0}, {4, 50.0}});
  for (const auto& ratios : cases) {
    FlexSequenceParallel flexsp({groups, cpu_backend(), c, 48, &profile}, FlexInner::ulysses);
    flexsp.restore_state(state_with(ratios));
    model.zero_grads();
    const StepSums sums = flexsp.train(model, b, 1.0f / static_cast<float>(targets));
    INFO("degree 1 corrected by " << ratios.at(1) << " on " << W << " ranks");
    CHECK(sums.loss_sum == Approx(expected_loss).epsilon(1e-5));
    check_close_per_tensor("gradient through corrected FlexSP", model.layout(),
                           std::vector<float>(model.grads(), model.grads() + model.num_params()), expected, 1e-5);
    const std::set<int64_t> degrees = degrees_of(flexsp.last_plan());  // every rank ran the plan rank 0 sent
    if (ratios.at(1) > 1) {
      CHECK(degrees.size() == 1);
      CHECK(degrees.count(1) == 0);
    } else {
      CHECK(degrees.count(4) == 0);
    }
    if (world().rank() != 0) continue;
    const FlexSequenceParallel::PlanReport report = flexsp.plan_report();
    CHECK(report.corrections == ratios);
    nlohmann::ordered_json record;
    flexsp.add_step_metrics(record);
    CHECK((record["plan"] == "flexsp" || record["plan"] == "batchada"));
    CHECK(record["plan_corrections"]["1"].get<double>() == ratios.at(1));
    const double chosen = record["plan"] == "flexsp" ? record["plan_estimates"]["flexsp_ms"].get<double>()
                                                     : record["plan_estimates"]["batchada_ms"].get<double>();
    CHECK(chosen <= record["plan_estimates"]["batchada_ms"].get<double>());
    CHECK(chosen <= record["plan_estimates"]["flexsp_ms"].get<double>());
    CHECK(chosen <= record["plan_estimates"]["static_sp_ms"].get<double>());
    CHECK(record["plan_estimates"]["static_sp_degree"] == W);  // holds model.max_seq_len = 256 of 48 a rank: all
  }
}

// FlexSP on every rank of one node, the model initialised alike everywhere.
struct OneNodeTraining {
  Config c = tiny_strategy_config("softmax", 256);
  cost::Profile profile = one_node_profile(world().size());
  RunGroups groups{world(), {}, all_degrees(world().size())};
  GPT model{c.model, 256, test_allocator()};
  OneNodeTraining() { model.init_weights(3); }
};

TEST_CASE("FlexSP learns corrections from its steps, in mode measured only", "[mpi][flexsp_train]") {
  const int W = world().size();
  if ((W & (W - 1)) != 0) return;
  OneNodeTraining t;
  auto& [c, profile, groups, model] = t;
  const Batch b = random_documents({W > 1 ? 90 : 40, 30, 20}, 5);
  for (const char* mode : {"measured", "model"}) {
    c.parallel.select_mode = mode;
    FlexSequenceParallel flexsp({groups, cpu_backend(), c, 48, &profile}, FlexInner::ulysses);
    for (int step = 0; step < 3; ++step) {
      model.zero_grads();
      flexsp.train(model, b, 0.01f);
    }
    INFO("mode " << mode);
    if (world().rank() != 0) continue;  // rank 0 keeps them
    const bool measured = std::string(mode) == "measured";
    CHECK(flexsp.corrections().steps_seen() == (measured ? 3 : 0));
    CHECK(flexsp.corrections().empty() == !measured);
    for (const auto& [placement, correction] : flexsp.corrections().by_placement()) {
      CHECK(correction.steps == 2);  // the first step is not counted
      CHECK(correction.ratio > 0);
    }
  }
}

TEST_CASE("FlexSP's corrections leave out the groups whose time carries the gradient reduction",
          "[mpi][flexsp_train]") {
  const int W = world().size();
  if ((W & (W - 1)) != 0) return;
  OneNodeTraining t;
  auto& [c, profile, groups, model] = t;
  // More tokens than the ranks hold at once (48 each): two micro-batches or more.
  const Batch b = random_documents({40, 40, 30, 30, 20, 20, 10, 10}, 5);
  FlexSequenceParallel flexsp({groups, cpu_backend(), c, 48, &profile}, FlexInner::ulysses);
  // What Corrections does with the groups measured without the reduction: each step's median ratio, then their mean
  // (3 steps, inside the 8-step window).
  std::map<flexsp::Placement, std::vector<double>> step_medians;
  int with = 0, without = 0;
  for (int step = 0; step < 3; ++step) {
    model.zero_grads();
    flexsp.train(model, b, 0.01f);
    if (world().rank() != 0) continue;
    const auto& micro = flexsp.plan_report().group_times;
    REQUIRE(micro.size() >= 2);
    std::map<flexsp::Placement, std::vector<double>> ratios;
    for (std::size_t m = 0; m < micro.size(); ++m)
      for (const auto& g : micro[m]) {
        if (W > 1 && m + 1 == micro.size()) CHECK(g.with_reduction);
        if (W == 1) CHECK_FALSE(g.with_reduction);  // one rank reduces nothing
        (g.with_reduction ? with : without) += 1;
        if (!g.with_reduction && g.estimated_ms > 0 && g.measured_ms > 0)
          ratios[{g.degree, 1}].push_back(g.measured_ms / g.estimated_ms);
      }
    if (step == 0) continue;  // not counted
    for (auto& [placement, r] : ratios) {
      std::sort(r.begin(), r.end());
      step_medians[placement].push_back(r.size() % 2 ? r[r.size() / 2] : (r[r.size() / 2 - 1] + r[r.size() / 2]) / 2);
    }
  }
  std::map<flexsp::Placement, double> expected;
  for (const auto& [placement, m] : step_medians)
    expected[placement] = std::accumulate(m.begin(), m.end(), 0.0) / static_cast<double>(m.size());
  if (world().rank() != 0) return;
  if (W > 1) CHECK(with > 0);
  REQUIRE(without > 0);
  REQUIRE(flexsp.corrections().by_placement().size() == expected.size());
  for (const auto& [placement, ratio] : expected)
    CHECK(flexsp.corrections().by_placement().at(placement).ratio == Approx(ratio).epsilon(1e-6));
}

TEST_CASE("a resumed FlexSP plans each step with the corrections the uninterrupted one used", "[flexsp_train]") {
  if (world().size() != 1) return;
  const Slowdown slowdown("1:3");  // every group measured at 3x its estimate, on any machine
  const Config c = tiny_strategy_config("softmax", 256);
  const cost::Profile profile = one_node_profile(1);
  RunGroups groups(world(), {}, {1});
  const StrategyEnv env{groups, cpu_backend(), c, 256, &profile};
  const cost::StepCostModel step_cost = cost::StepCostModel::from_profile(
      profile, {.n_layer = c.model.n_layer, .n_embd = c.model.n_embd, .n_head = c.model.n_head,
                .num_params = model_layout(c.model).num_params});
  GPT model(c.model, 256, test_allocator());
  model.init_weights(3);
  // Batches 0 and 1 have the same documents: each is planned with its own step's corrections.
  const std::vector<Batch> batches = {random_documents({30, 20}, 0), random_documents({30, 20}, 1),
                                      random_documents({25, 10}, 2), random_documents({40}, 3),
                                      random_documents({12, 12, 12}, 4), random_documents({50, 3}, 5)};
  const int n = static_cast<int>(batches.size());
  // The loop's order: the step's estimate (the selector's choice), the next batch prepared, the step trained.
  const auto step = [&](FlexSequenceParallel& flexsp, int k) {
    flexsp.estimate(batches[k], step_cost);
    if (k + 1 < n) flexsp.prepare(batches[k + 1]);
    model.zero_grads();
    flexsp.train(model, batches[k], 0.01f);
    return flexsp.plan_report().corrections;
  };
  FlexSequenceParallel uninterrupted(env, FlexInner::ulysses);
  std::vector<std::map<int64_t, double>> used;
  nlohmann::json saved;
  uninterrupted.prepare(batches[0]);
  for (int k = 0; k < n; ++k) {
    used.push_back(step(uninterrupted, k));
    if (k == 1) saved = nlohmann::json::parse(uninterrupted.checkpoint_state().dump());
  }
  // A step's plan is made while the previous one trains: it knows the steps before that. Step 0 is not counted, so
  // the first correction plans step 3.
  CHECK(used[0].empty());
  CHECK(used[1].empty());
  CHECK(used[2].empty());
  CHECK(used[3].at(1) == Approx(3.0));
  CHECK(used[5].at(1) == Approx(3.0));
  // Resumed after step 1: step 2 plans without the correction step 1 taught, as the uninterrupted run did.
  FlexSequenceParallel resumed(env, FlexInner::ulysses);
  resumed.restore_state(saved);
  CHECK(resumed.corrections() == flexsp::Corrections::from_json(saved["corrections"], "x"));
  resumed.prepare(batches[2]);
  for (int k = 2; k < n; ++k) CHECK(step(resumed, k) == used[k]);
  CHECK(resumed.checkpoint_state() == uninterrupted.checkpoint_state());
}

TEST_CASE("FlexSP's checkpoint state round-trips through the selector's, malformed values name the field",
          "[flexsp_train]") {
  if (world().size() != 1) return;
  const Config c = tiny_strategy_config("softmax", 256);
  const cost::Profile profile = one_node_profile(1);
  RunGroups groups(world(), {}, {1});
  const StrategyEnv env{groups, cpu_backend(), c, 256, &profile};
  const nlohmann::json kept = state_with({{1, 1.0 / 3.0}});
  std::vector<std::unique_ptr<Strategy>> one;
  one.push_back(std::make_unique<FlexSequenceParallel>(env, FlexInner::ulysses));
  Selector selector(std::move(one), std::nullopt, Selector::Mode::measured, world());
  const nlohmann::json fresh = selector.state();
  CHECK(fresh["strategies"]["flexsp"]["corrections"]["groups"].empty());
  nlohmann::json state = fresh;
  state["strategies"]["flexsp"] = kept;
  selector.restore(nlohmann::json::parse(state.dump()));
  CHECK(selector.state() == state);  // 1/3 back exactly
  selector.restore(fresh);
  CHECK(selector.state() == fresh);
  // A checkpoint of a version without FlexSP's state: nothing restored, no error.
  selector.restore(nlohmann::json{{"mode", "measured"}, {"corrections", nlohmann::json::object()}});
  CHECK(selector.state() == fresh);
  nlohmann::json bad = state;
  bad["strategies"]["flexsp"]["corrections"]["groups"][0]["ratio"] = "slow";
  CHECK_THROWS_WITH(selector.restore(bad),
                    Catch::Contains("selector state: strategies.flexsp.corrections.groups[0].ratio"));
  bad = state;
  bad["strategies"]["flexsp"]["next_plan"]["groups"][0]["degree"] = 6;
  CHECK_THROWS_WITH(selector.restore(bad), Catch::Contains("strategies.flexsp.next_plan.groups[0].degree"));
  bad = state;
  bad["strategies"]["flexsp"].erase("next_plan");
  CHECK_THROWS_WITH(selector.restore(bad), Catch::Contains("strategies.flexsp: needs 'corrections' and 'next_plan'"));
  bad = state;
  bad["strategies"] = 3;
  CHECK_THROWS_WITH(selector.restore(bad), Catch::Contains("'strategies' is not an object"));
}

TEST_CASE("TRIDENT_TEST_FLEXSP_SLOWDOWN must be DEGREE:FACTOR pairs", "[flexsp_train]") {
  if (world().size() != 1) return;
  const Config c = tiny_strategy_config("softmax", 256);
  const cost::Profile profile = one_node_profile(1);
  RunGroups groups(world(), {}, {1});
  const StrategyEnv env{groups, cpu_backend(), c, 256, &profile};
  for (const char* wrong : {"1", "1:x", "1:-2", "0:2", "1:2,", "1:2;2:3"}) {
    const Slowdown slowdown(wrong);
    CHECK_THROWS_WITH(FlexSequenceParallel(env, FlexInner::ulysses),
                      Catch::Contains("TRIDENT_TEST_FLEXSP_SLOWDOWN") && Catch::Contains("DEGREE:FACTOR"));
  }
  const Slowdown slowdown("1:3,4:0.5");
  CHECK_NOTHROW(FlexSequenceParallel(env, FlexInner::ulysses));
}
