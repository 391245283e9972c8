// Whole-batch planning: every plan is valid, groups never straddle nodes needlessly, the policies for sequences
// longer than the cluster, and the baselines.
#include <catch2/catch.hpp>

#include <random>

#include <fmt/ranges.h>

#include "kernels/common/error.h"
#include "flexsp_test_util.h"
#include "parallel/flexsp/fast_solver.h"
#include "parallel/flexsp/milp_solver.h"
#include "parallel/flexsp/planner.h"

namespace trident::flexsp {
namespace {

std::vector<int64_t> long_tailed(std::mt19937_64& rng, size_t n, int64_t longest) {
  std::lognormal_distribution<double> tail(3.5, 1.2);
  std::vector<int64_t> lengths;
  for (size_t k = 0; k < n; ++k) lengths.push_back(std::clamp<int64_t>(std::llround(tail(rng)), 1, longest));
  return lengths;
}

void check_no_needless_straddle(const BatchPlan& plan, const cost::GroupCostModel& cost) {
  for (const MicroBatchPlan& mb : plan.micro_batches)
    for (const GroupPlan& g : mb.groups) {
      const int64_t first_node = g.first_device / cost.devices_per_node();
      const int64_t last_node = (g.first_device + g.degree - 1) / cost.devices_per_node();
      CHECK(last_node - first_node + 1 == cost.nodes_spanned(g.degree));
    }
}

TEST_CASE("batch plans are valid: memory, devices, each sequence exactly once, aligned groups", "[flexsp]") {
  const auto cost = test::small_cluster(4, 4);  // 16 devices, 128 tokens each
  const FastSolver fast;
  const MilpSolver milp({.time_limit_s = 0.5, .buckets = 8});  // a time-limited incumbent is fine here
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 20; ++trial) {
    const std::vector<int64_t> lengths = long_tailed(rng, 10 + rng() % 60, cost.token_capacity(16));
    const BatchPlan plan = plan_batch(lengths, cost, fast);
    REQUIRE_NOTHROW(check_batch_plan(plan, cost));
    check_no_needless_straddle(plan, cost);
    double sum = 0;
    for (const MicroBatchPlan& mb : plan.micro_batches) sum += mb.makespan_s;
    CHECK(plan.time_s == Approx(sum));
    int64_t tokens = 0;
    for (int64_t s : lengths) tokens += s;
    CHECK(static_cast<int64_t>(plan.micro_batches.size()) * cost.token_capacity(1) * cost.devices() >= tokens);
    if (trial < 3) {  // the MILP refines the same micro-batches and is never worse
      const BatchPlan refined = plan_batch(lengths, cost, fast, &milp);
      REQUIRE_NOTHROW(check_batch_plan(refined, cost));
      CHECK(refined.micro_batches.size() == plan.micro_batches.size());
      CHECK(refined.time_s <= plan.time_s * (1 + 1e-9));
    }
    int64_t degree = 0;
    const BatchPlan ada = plan_best_homogeneous(lengths, cost, degree);
    REQUIRE_NOTHROW(check_batch_plan(ada, cost));
    for (const MicroBatchPlan& mb : ada.micro_batches)
      for (const GroupPlan& g : mb.groups) CHECK(g.degree == degree);
    const BatchPlan stat = plan_homogeneous(lengths, cost, 16);
    REQUIRE_NOTHROW(check_batch_plan(stat, cost));
    CHECK(ada.time_s <= stat.time_s * (1 + 1e-9));  // degree 16 is one of BatchAda's candidates
  }
}

TEST_CASE("the plan checks catch every kind of broken plan", "[flexsp]") {
  const auto cost = test::small_cluster(1, 4);
  const std::vector<int64_t> lengths = {100, 50, 20};
  const MicroBatchPlan good = make_micro_batch({{2, {0}}, {1, {1}}, {1, {2}}}, lengths, cost);
  REQUIRE_NOTHROW(check_micro_batch(good, lengths, cost));
  CHECK(describe_groups(good) == "<2, 1x2>");
  CHECK(good.groups[0].first_device == 0);
  CHECK(good.groups[2].first_device == 3);

  MicroBatchPlan misaligned = good;
  std::swap(misaligned.groups[0].degree, misaligned.groups[1].degree);  // <1, 2, 1>: the 2 starts at device 1
  misaligned.groups[1].first_device = 1;
  misaligned.groups[2].first_device = 3;
  CHECK_THROWS_WITH(check_micro_batch(misaligned, lengths, cost), Catch::Contains("not a multiple"));
  MicroBatchPlan over_memory = make_micro_batch({{1, {0, 1}}, {1, {2}}}, lengths, cost);  // 150 > 128
  CHECK_THROWS_WITH(check_micro_batch(over_memory, lengths, cost), Catch::Contains("over its capacity"));
  MicroBatchPlan twice = make_micro_batch({{2, {0}}, {1, {1, 2}}, {1, {2}}}, lengths, cost);
  CHECK_THROWS_WITH(check_micro_batch(twice, lengths, cost), Catch::Contains("placed 2 times"));
  MicroBatchPlan missing = make_micro_batch({{2, {0}}, {1, {1}}}, lengths, cost);
  CHECK_THROWS_WITH(check_micro_batch(missing, lengths, cost), Catch::Contains("sequence 2 is placed 0 times"));
  MicroBatchPlan too_many = make_micro_batch({{4, {0}}, {1, {1}}, {1, {2}}}, lengths, cost);
  CHECK_THROWS_WITH(check_micro_batch(too_many, lengths, cost), Catch::Contains("uses 6 devices"));
  MicroBatchPlan not_pow2 = make_micro_batch({{3, {0, 1, 2}}}, lengths, cost);
  CHECK_THROWS_WITH(check_micro_batch(not_pow2, lengths, cost), Catch::Contains("not a power of two"));
}

TEST_CASE("sequences longer than the cluster: an error, dropped, or split", "[flexsp]") {
  const std::vector<int64_t> lengths = {10, 1000, 20, 250};
  CHECK_THROWS_WITH(apply_length_policy(lengths, 512, TooLong::error),
                    Catch::Contains("sequence 1") && Catch::Contains("1000 tokens") && Catch::Contains("512") &&
                        Catch::Contains("parallel.flexsp.too_long"));
  const auto dropped = apply_length_policy(lengths, 512, TooLong::drop);
  REQUIRE(dropped.size() == 3);
  CHECK(dropped[1].sequence == 2);
  const auto split = apply_length_policy(lengths, 512, TooLong::split);
  REQUIRE(split.size() == 5);
  CHECK(split[1].sequence == 1);
  CHECK(split[1].offset == 0);
  CHECK(split[1].length == 512);
  CHECK(split[2].offset == 512);
  CHECK(split[2].length == 488);
  CHECK(parse_too_long("split") == TooLong::split);
  CHECK_THROWS_AS(parse_too_long("truncate"), ConfigError);

  // the planner itself refuses (never loops) when a sequence fits nowhere
  const auto cost = test::small_cluster(1, 4);
  CHECK_THROWS_WITH(plan_batch(std::vector<int64_t>{600}, cost, FastSolver()), Catch::Contains("does not fit"));
  CHECK_THROWS_WITH(plan_homogeneous(std::vector<int64_t>{300}, cost, 2), Catch::Contains("cannot hold"));
}

TEST_CASE("memory forces more micro-batches, never a failure, when every sequence fits", "[flexsp]") {
  const auto cost = test::small_cluster(1, 2);  // 2 devices x 128 tokens
  const std::vector<int64_t> lengths(9, 100);   // at most two per micro-batch
  const BatchPlan plan = plan_batch(lengths, cost, FastSolver());
  REQUIRE_NOTHROW(check_batch_plan(plan, cost));
  CHECK(plan.micro_batches.size() == 5);
}

}  // namespace
}  // namespace trident::flexsp

namespace trident::flexsp {
namespace {

TEST_CASE("FlexSP's plan is never slower than the best single degree or static SP, also where memory is tight",
          "[flexsp]") {
  // 8 devices of 128 tokens: batches of a few similar-length sequences filling 85-98% of the cluster, where the fast
  // solver's greedy packing is weakest.
  const auto cost = test::small_cluster(2, 4);
  const FastSolver fast;
  std::mt19937_64 rng(5);
  int fell_back = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const int n = 3 + static_cast<int>(rng() % 6);
    const double fill = 0.85 + 0.13 * static_cast<double>(rng() % 1000) / 1000.0;
    const auto share = static_cast<int64_t>(fill * 8 * 128 / n);
    std::vector<int64_t> lengths;
    for (int k = 0; k < n; ++k)
      lengths.push_back(std::clamp<int64_t>(share + static_cast<int64_t>(rng() % 21) - 10, 1, 8 * 128));
    bool took_single = false;
    const BatchPlan plan = plan_flexsp(lengths, cost, fast, nullptr, 4, &took_single);
    REQUIRE_NOTHROW(check_batch_plan(plan, cost));
    int64_t degree = 0;
    const BatchPlan ada = plan_best_homogeneous(lengths, cost, degree);
    const BatchPlan stat = plan_homogeneous(lengths, cost, 8);
    const BatchPlan solver_only = plan_batch(lengths, cost, fast);
    INFO("lengths " << fmt::format("{}", fmt::join(lengths, " ")));
    CHECK(plan.time_s <= ada.time_s * (1 + 1e-12));
    CHECK(plan.time_s <= stat.time_s * (1 + 1e-12));
    CHECK(plan.time_s <= solver_only.time_s * (1 + 1e-12));
    CHECK(took_single == (ada.time_s < solver_only.time_s));
    fell_back += took_single;
  }
  WARN("the best single degree beat the fast solver on " << fell_back << " of 60 tight-memory batches");
}

}  // namespace
}  // namespace trident::flexsp
