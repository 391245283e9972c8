// FlexSP's corrections: the update rule (first step skipped, a step's groups of one placement give their median
// ratio, the correction is the mean of those over the placement's steps, then follows its last 8), the factors of
// unmeasured degrees, the corrected cost model, the exact JSON round trip with malformed values named, and the step's
// plan choice: the fastest under the corrected model of FlexSP's mixed plan and BatchAda's, so corrections that make
// small groups slow turn a mixed plan into a single-degree one.
#include <catch2/catch.hpp>

#include <optional>
#include <set>

#include "flexsp_test_util.h"
#include "kernels/common/error.h"
#include "parallel/flexsp/corrections.h"
#include "parallel/flexsp/fast_solver.h"
#include "parallel/flexsp/planner.h"

namespace trident::flexsp {
namespace {

GroupSample sample(int64_t degree, int64_t nodes, double estimated, double measured) {
  return {{degree, nodes}, estimated, measured};
}

TEST_CASE("corrections: the first step is skipped, then the mean of each step's median ratio, then the last 8",
          "[flexsp]") {
  Corrections c;
  const std::vector<GroupSample> slow_ones = {sample(1, 1, 1.0, 9.0), sample(2, 1, 1.0, 1.5)};
  c.observe(slow_ones);  // the first step allocates buffers
  CHECK(c.empty());
  CHECK(c.steps_seen() == 1);
  // A step's groups of one placement give their median ratio: 3, 1 and 7 over 1 give 3 (the outlier 7 does not move
  // it, where their sum would give 11 / 3); a zero estimate is left out.
  c.observe(std::vector<GroupSample>{sample(1, 1, 1.0, 3.0), sample(1, 1, 1.0, 1.0), sample(1, 1, 1.0, 7.0),
                                     sample(1, 1, 0.0, 5.0), sample(2, 1, 2.0, 3.0)});
  CHECK(c.by_placement().at({1, 1}).ratio == 3.0);
  CHECK(c.by_placement().at({1, 1}).steps == 1);
  CHECK(c.by_placement().at({2, 1}).ratio == 1.5);
  // An even count: the mean of the middle two, (1 + 2) / 2; the correction the mean of the two steps, (3 + 1.5) / 2.
  c.observe(std::vector<GroupSample>{sample(1, 1, 1.0, 1.0), sample(1, 1, 2.0, 4.0), sample(1, 1, 1.0, 0.5),
                                     sample(1, 1, 1.0, 9.0)});
  CHECK(c.by_placement().at({1, 1}).ratio == 2.25);
  CHECK(c.by_placement().at({1, 1}).steps == 2);
  CHECK(c.by_placement().at({2, 1}).ratio == 1.5);  // not in this step: unchanged
  CHECK(c.steps_seen() == 3);
  // A third step: the mean of 3, 1.5 and 6.
  c.observe(std::vector<GroupSample>{sample(1, 1, 1.0, 6.0)});
  CHECK(c.by_placement().at({1, 1}).ratio == Approx(3.5));
  // The same degree on two nodes is another placement.
  c.observe(std::vector<GroupSample>{sample(2, 2, 1.0, 5.0)});
  CHECK(c.by_placement().at({2, 2}).ratio == 5.0);
  CHECK(c.by_placement().at({2, 1}).ratio == 1.5);
}

TEST_CASE("corrections: after 8 steps a placement follows its last ones (a step weighs 1/8)", "[flexsp]") {
  Corrections c;
  c.observe({});
  for (int step = 0; step < Corrections::kWindowSteps; ++step)
    c.observe(std::vector<GroupSample>{sample(1, 1, 1.0, 2.0)});
  CHECK(c.by_placement().at({1, 1}).ratio == 2.0);
  c.observe(std::vector<GroupSample>{sample(1, 1, 1.0, 10.0)});  // the ninth: 2 + (10 - 2) / 8
  CHECK(c.by_placement().at({1, 1}).ratio == Approx(3.0));
  CHECK(c.by_placement().at({1, 1}).steps == Corrections::kWindowSteps + 1);
  // Steps at a new ratio bring it there geometrically, not as slowly as a mean over every step would.
  for (int step = 0; step < 40; ++step) c.observe(std::vector<GroupSample>{sample(1, 1, 1.0, 10.0)});
  CHECK(c.by_placement().at({1, 1}).ratio == Approx(10.0).epsilon(0.01));
}

TEST_CASE("corrections: a measured degree its own factor, an unmeasured one the mean, none at all 1", "[flexsp]") {
  const auto cost = test::small_cluster(2, 2);  // 4 devices, 2 a node: a group of 4 spans 2 nodes
  Corrections c;
  CHECK(c.factors(cost).empty());
  c.observe({});
  c.observe(std::vector<GroupSample>{sample(1, 1, 1.0, 3.0), sample(4, 2, 1.0, 2.0), sample(4, 1, 1.0, 100.0)});
  const std::map<int64_t, double> f = c.factors(cost);
  CHECK(f.at(1) == 3.0);
  CHECK(f.at(4) == 2.0);  // the placement of this cluster (2 nodes); the 1-node one belongs to another cluster
  CHECK(f.at(2) == 2.5);  // not measured: the mean of the two that apply here
  // The corrected model scales every time of a degree by its factor, and nothing else.
  const cost::GroupCostModel corrected = c.apply(cost);
  const std::vector<int64_t> lengths = {50, 20};
  for (int64_t d : {1, 2, 4}) {
    CHECK(corrected.correction(d) == f.at(d));
    CHECK(corrected.group_time_s(lengths, d) == Approx(f.at(d) * cost.group_time_s(lengths, d)));
    CHECK(corrected.sequence_s(50, d) == Approx(f.at(d) * cost.sequence_s(50, d)));
    CHECK(corrected.group_overhead_s(d) == Approx(f.at(d) * cost.group_overhead_s(d)));
    CHECK(corrected.token_capacity(d) == cost.token_capacity(d));
  }
  CHECK(cost.correction(1) == 1.0);
  CHECK(corrected.with_corrections({}).group_time_s(lengths, 1) == cost.group_time_s(lengths, 1));
}

TEST_CASE("corrections: JSON round-trips exactly, a malformed value names its field", "[flexsp]") {
  Corrections c;
  c.observe({});
  c.observe(std::vector<GroupSample>{sample(1, 1, 3.0, 1.0), sample(8, 2, 0.7, 0.1 + 0.2)});
  c.observe(std::vector<GroupSample>{sample(1, 1, 7.0, 1.0)});
  const nlohmann::json text = nlohmann::json::parse(c.to_json().dump());  // through text, as in trainer_state.json
  const Corrections back = Corrections::from_json(text, "x");
  CHECK(back == c);
  CHECK(back.by_placement().at({1, 1}).ratio == 1.0 / 3.0 + (1.0 / 7.0 - 1.0 / 3.0) / 2.0);
  CHECK(Corrections::from_json({{"steps_seen", 0}, {"groups", nlohmann::json::array()}}, "x").empty());

  const auto with_group = [](nlohmann::json g) {
    return nlohmann::json{{"steps_seen", 4}, {"groups", nlohmann::json::array({std::move(g)})}};
  };
  const nlohmann::json good = {{"degree", 2}, {"nodes", 1}, {"ratio", 1.5}, {"steps", 2}};
  CHECK_NOTHROW(Corrections::from_json(with_group(good), "x"));
  const auto broken = [&](const char* key, nlohmann::json value) {
    nlohmann::json g = good;
    g[key] = std::move(value);
    return with_group(g);
  };
  CHECK_THROWS_WITH(Corrections::from_json(broken("ratio", -1.0), "state.flexsp"),
                    Catch::Contains("state.flexsp.groups[0].ratio"));
  CHECK_THROWS_WITH(Corrections::from_json(broken("ratio", "fast"), "x"), Catch::Contains("x.groups[0].ratio"));
  CHECK_THROWS_WITH(Corrections::from_json(broken("degree", 3), "x"), Catch::Contains("x.groups[0].degree"));
  CHECK_THROWS_WITH(Corrections::from_json(broken("nodes", 0), "x"), Catch::Contains("x.groups[0].nodes"));
  CHECK_THROWS_WITH(Corrections::from_json(broken("steps", 1.5), "x"), Catch::Contains("x.groups[0].steps"));
  CHECK_THROWS_WITH(Corrections::from_json({{"groups", nlohmann::json::array()}}, "x"),
                    Catch::Contains("x: needs a non-negative integer 'steps_seen'"));
  CHECK_THROWS_WITH(Corrections::from_json({{"steps_seen", 1}, {"groups", 2}}, "x"), Catch::Contains("x.groups"));
  const nlohmann::json twice = {{"steps_seen", 4}, {"groups", nlohmann::json::array({good, good})}};
  CHECK_THROWS_WITH(Corrections::from_json(twice, "x"), Catch::Contains("x.groups[1]") && Catch::Contains("second"));
  CHECK_THROWS_AS(Corrections::from_json(broken("ratio", 0.0), "x"), RuntimeError);
}

// Always the same mixed layout of three sequences: a pair for the first, one device each for the others (none for
// other micro-batch sizes), so the choice between it and BatchAda is what is tested.
class PairAndSingles final : public MicroBatchSolver {
 public:
  std::string name() const override { return "pair and singles"; }
  std::optional<MicroBatchPlan> solve(std::span<const int64_t> lengths,
                                      const cost::GroupCostModel& cost) const override {
    if (lengths.size() != 3) return std::nullopt;
    return make_micro_batch({{2, {0}}, {1, {1}}, {1, {2}}}, lengths, cost);
  }
};

std::set<int64_t> degrees_of(const BatchPlan& plan) {
  std::set<int64_t> d;
  for (const MicroBatchPlan& mb : plan.micro_batches)
    for (const GroupPlan& g : mb.groups) d.insert(g.degree);
  return d;
}

// 4 devices of 128 tokens: the 200-token sequence needs a pair; the 120-token ones fit a device each.
const std::vector<int64_t> kBatch = {200, 120, 120};

const std::vector<GroupSample> kSlowSingles = {sample(1, 1, 1.0, 3.0), sample(2, 1, 1.0, 1.0), sample(4, 1, 1.0, 1.0)};

Corrections measured(std::vector<GroupSample> step) {
  Corrections c;
  c.observe({});
  c.observe(step);
  return c;
}

TEST_CASE("the step's plan: the mixed one where it is fastest, BatchAda's once corrections make small groups slow",
          "[flexsp]") {
  const auto cost = test::small_cluster(1, 4);
  const PairAndSingles mixed;
  // Uncorrected, the mixed plan is the fastest: the singles finish before the pair, and one group of 4 is slower.
  const PlanChoice raw = choose_plan(kBatch, cost, &mixed, nullptr, 4, 4);
  CHECK(raw.kind == PlanChoice::Kind::flexsp);
  CHECK(degrees_of(raw.plan) == std::set<int64_t>{1, 2});
  CHECK(raw.flexsp_s < raw.batchada_s);
  CHECK(raw.plan.time_s == raw.flexsp_s);
  CHECK(raw.static_degree == 4);
  CHECK(raw.static_s >= raw.batchada_s);
  // Degree-1 groups measured 3x slower than estimated, the others as estimated: the mixed plan is now slower than one
  // degree for all.
  const cost::GroupCostModel slow_singles = measured(kSlowSingles).apply(cost);
  const PlanChoice corrected = choose_plan(kBatch, slow_singles, &mixed, nullptr, 4, 4);
  CHECK(corrected.kind == PlanChoice::Kind::batchada);
  CHECK(degrees_of(corrected.plan) == std::set<int64_t>{corrected.batchada_degree});
  CHECK(corrected.batchada_degree > 1);
  CHECK(corrected.plan.time_s == corrected.batchada_s);
  CHECK(corrected.batchada_s < corrected.flexsp_s);
  CHECK(corrected.batchada_s <= corrected.static_s);
  REQUIRE_NOTHROW(check_batch_plan(corrected.plan, slow_singles));
  // The reverse: big groups measured slow (the mean covers the unmeasured pair) keep the mixed plan, by more.
  const cost::GroupCostModel slow_big = measured({sample(4, 1, 1.0, 3.0), sample(1, 1, 1.0, 1.0)}).apply(cost);
  const PlanChoice kept = choose_plan(kBatch, slow_big, &mixed, nullptr, 4, 4);
  CHECK(kept.kind == PlanChoice::Kind::flexsp);
  CHECK(degrees_of(kept.plan) == std::set<int64_t>{1, 2});
  CHECK(kept.flexsp_s < kept.batchada_s);
  // Without a mixed solver (parallel.flexsp.degrees: single): BatchAda's plan, FlexSP's not planned.
  const PlanChoice single = choose_plan(kBatch, cost, nullptr, nullptr, 4, 4);
  CHECK(single.kind == PlanChoice::Kind::batchada);
  CHECK(single.flexsp_s == PlanChoice::kNotPlanned);
}

TEST_CASE("with the fast solver, a corrected plan is never slower than BatchAda's or static SP's under the same "
          "corrections", "[flexsp]") {
  const auto cost = test::small_cluster(1, 4);
  const FastSolver fast;
  const PlanChoice raw = choose_plan(kBatch, cost, &fast, nullptr, 4, 4);
  CHECK(degrees_of(raw.plan).count(1) == 1);  // uncorrected: singles for the 120-token sequences
  const cost::GroupCostModel slow_singles = measured(kSlowSingles).apply(cost);
  const PlanChoice corrected = choose_plan(kBatch, slow_singles, &fast, nullptr, 4, 4);
  CHECK(degrees_of(corrected.plan).count(1) == 0);  // no single is worth its measured time
  CHECK(corrected.plan.time_s <= corrected.batchada_s);
  CHECK(corrected.plan.time_s <= corrected.static_s);
  CHECK(corrected.plan.time_s < slow_singles.group_time_s(std::vector<int64_t>{120}, 1));
  // A sequence no group holds is named as plan_batch names it.
  CHECK_THROWS_WITH(choose_plan(std::vector<int64_t>{600, 10}, cost, &fast), Catch::Contains("600 tokens does not fit"));
}

}  // namespace
}  // namespace trident::flexsp
