// Both micro-batch solvers against exhaustive enumeration on small random instances.
#include <catch2/catch.hpp>

#include <random>

#include "flexsp_test_util.h"
#include "parallel/flexsp/fast_solver.h"
#include "parallel/flexsp/milp_solver.h"

namespace trident::flexsp {
namespace {

// The fast solver's stated bound on these instances (parallel/flexsp/README.md).
constexpr double kFastBound = 1.10;

struct Instance {
  int64_t nodes, per_node;
  std::vector<int64_t> lengths;
};

// Random instances: 1-8 sequences, clusters of 2 to 8 devices (6 = three nodes of two: not a power of two),
// lengths up to what the whole cluster holds, some repeated; only instances that have a plan.
std::vector<Instance> instances(int count) {
  const std::vector<std::pair<int64_t, int64_t>> clusters = {{1, 2}, {1, 4}, {2, 2}, {2, 4}, {1, 8}, {3, 2}, {4, 2}};
  std::mt19937_64 rng(7);
  std::vector<Instance> out;
  while (static_cast<int>(out.size()) < count) {
    auto [nodes, per_node] = clusters[rng() % clusters.size()];
    const auto cost = test::small_cluster(nodes, per_node);
    Instance inst{nodes, per_node, {}};
    const int64_t n = 1 + static_cast<int64_t>(rng() % 8);
    const int64_t longest = cost.token_capacity(cost.max_degree());
    for (int64_t k = 0; k < n; ++k) {
      const bool repeat = k > 0 && rng() % 4 == 0;
      // mostly short, sometimes long: a long tail like the real corpora
      const int64_t s = repeat ? inst.lengths[rng() % k]
                               : (rng() % 3 == 0 ? 1 + static_cast<int64_t>(rng() % longest)
                                                 : 1 + static_cast<int64_t>(rng() % 160));
      inst.lengths.push_back(s);
    }
    if (test::exhaustive_makespan(inst.lengths, cost) < std::numeric_limits<double>::infinity())
      out.push_back(std::move(inst));
  }
  return out;
}

TEST_CASE("the MILP solver finds the optimum and the fast solver stays within its bound", "[flexsp]") {
  const MilpSolver milp({.time_limit_s = 60, .buckets = 16});
  const FastSolver fast;
  double worst = 1;
  int fast_optimal = 0, fast_missed = 0;
  const auto all = instances(150);
  for (const Instance& inst : all) {
    const auto cost = test::small_cluster(inst.nodes, inst.per_node);
    const double optimum = test::exhaustive_makespan(inst.lengths, cost);
    INFO("cluster " << inst.nodes << "x" << inst.per_node << ", lengths " << fmt::format("{}", fmt::join(inst.lengths, " ")));
    auto m = milp.solve(inst.lengths, cost);
    REQUIRE(m.has_value());
    REQUIRE_NOTHROW(check_micro_batch(*m, inst.lengths, cost));
    CHECK(m->proven_optimal);
    CHECK(m->makespan_s == Approx(optimum).epsilon(1e-9));
    auto f = fast.solve(inst.lengths, cost);
    int64_t tokens = 0;
    for (int64_t s : inst.lengths) tokens += s;
    if (!f) {  // greedy bin packing may miss a plan only when memory is nearly full
      CHECK(tokens * 4 > cost.token_capacity(1) * cost.devices() * 3);
      ++fast_missed;
      continue;
    }
    REQUIRE_NOTHROW(check_micro_batch(*f, inst.lengths, cost));
    CHECK(f->makespan_s >= optimum * (1 - 1e-9));
    CHECK(f->makespan_s <= optimum * kFastBound);
    worst = std::max(worst, f->makespan_s / optimum);
    fast_optimal += f->makespan_s <= optimum * (1 + 1e-9);
  }
  WARN("fast solver: optimal on " << fast_optimal << " of " << all.size() << " instances, no plan on " << fast_missed
       << ", worst ratio " << worst);
}

TEST_CASE("a micro-batch whose longest sequence fits no group has no plan", "[flexsp]") {
  const auto cost = test::small_cluster(1, 4);  // 4 x 128 tokens
  const std::vector<int64_t> lengths = {10, 513};
  CHECK_FALSE(FastSolver().solve(lengths, cost).has_value());
  CHECK_FALSE(MilpSolver().solve(lengths, cost).has_value());
  CHECK_FALSE(FastSolver(2).solve(std::vector<int64_t>{300}, cost).has_value());  // 300 > 2 x 128
}

TEST_CASE("homogeneous plans use one degree only", "[flexsp]") {
  const auto cost = test::small_cluster(2, 4);
  const std::vector<int64_t> lengths = {200, 30, 40, 50, 60, 70, 10};
  for (int64_t d : {2, 4, 8}) {
    auto plan = FastSolver(d).solve(lengths, cost);
    REQUIRE(plan.has_value());
    REQUIRE_NOTHROW(check_micro_batch(*plan, lengths, cost));
    for (const Group& g : plan->groups) CHECK(g.degree == d);
  }
}

}  // namespace
}  // namespace trident::flexsp
