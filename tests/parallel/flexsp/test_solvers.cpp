// Both micro-batch solvers against exhaustive enumeration on small random instances: long-tailed lengths, memory
// nearly full, similar lengths.
#include <catch2/catch.hpp>

#include <random>

#include "flexsp_test_util.h"
#include "parallel/flexsp/fast_solver.h"
#include "parallel/flexsp/milp_solver.h"

namespace trident::flexsp {
namespace {

// The fast solver's stated bound on these instances (parallel/flexsp/README.md).
constexpr double kFastBound = 1.10;
// Instances of more sequences than the exact search takes, each solved to a proven optimum by the MILP.
constexpr int kLargeInstances = 12;

struct Instance {
  int64_t nodes, per_node;
  std::vector<int64_t> lengths;
};

// 2 to 8 devices (6 = three nodes of two: not a power of two).
const std::vector<std::pair<int64_t, int64_t>> kClusters = {{1, 2}, {1, 4}, {2, 2}, {2, 4}, {1, 8}, {3, 2}, {4, 2}};

bool has_plan(const Instance& inst) {
  return test::exhaustive_makespan(inst.lengths, test::small_cluster(inst.nodes, inst.per_node)) <
         std::numeric_limits<double>::infinity();
}

// Random instances: 1-8 sequences, lengths up to what the whole cluster holds, some repeated; only instances that
// have a plan.
std::vector<Instance> instances(int count) {
  std::mt19937_64 rng(7);
  std::vector<Instance> out;
  while (static_cast<int>(out.size()) < count) {
    auto [nodes, per_node] = kClusters[rng() % kClusters.size()];
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
    if (has_plan(inst)) out.push_back(std::move(inst));
  }
  return out;
}

// The clusters above and 3 nodes of 4 (12 devices: groups of 8 and 4 compete), `per_cluster` instances each that
// have a plan (twice that on 8 or more devices, where layouts mix most), lengths from `draw(rng, cluster tokens)`.
template <typename Draw>
std::vector<Instance> per_cluster_instances(int per_cluster, uint64_t seed, Draw draw) {
  auto clusters = kClusters;
  clusters.emplace_back(3, 4);
  std::mt19937_64 rng(seed);
  std::vector<Instance> out;
  for (auto [nodes, per_node] : clusters) {
    const auto cost = test::small_cluster(nodes, per_node);
    for (int found = 0; found < per_cluster * (cost.devices() >= 8 ? 2 : 1);) {
      Instance inst{nodes, per_node, draw(rng, cost.token_capacity(1) * cost.devices())};
      if (has_plan(inst)) out.push_back(std::move(inst)), ++found;
    }
  }
  return out;
}

// Tight memory: 2-8 sequences filling 85-98% of the cluster's tokens, either similar shares (the planner's
// tight-memory batches) or a random split of the total.
std::vector<Instance> tight_instances(int per_cluster) {
  return per_cluster_instances(per_cluster, 13, [](std::mt19937_64& rng, int64_t cluster_tokens) {
    const int64_t n = 2 + static_cast<int64_t>(rng() % 7);
    const double fill = 0.85 + 0.13 * static_cast<double>(rng() % 1000) / 1000.0;
    const auto total = static_cast<int64_t>(fill * static_cast<double>(cluster_tokens));
    std::vector<int64_t> lengths;
    if (rng() % 2 == 0) {
      for (int64_t k = 0; k < n; ++k)
        lengths.push_back(std::max<int64_t>(1, total / n + static_cast<int64_t>(rng() % 21) - 10));
    } else {
      std::vector<int64_t> cuts = {0, total};
      for (int64_t k = 1; k < n; ++k) cuts.push_back(1 + static_cast<int64_t>(rng() % (total - 1)));
      std::sort(cuts.begin(), cuts.end());
      for (int64_t k = 0; k < n; ++k) lengths.push_back(std::max<int64_t>(1, cuts[k + 1] - cuts[k]));
    }
    return lengths;
  });
}

// Similar lengths: 4-8 sequences within 5% of each other, anywhere up to filling the cluster.
std::vector<Instance> similar_instances(int per_cluster) {
  return per_cluster_instances(per_cluster, 17, [](std::mt19937_64& rng, int64_t cluster_tokens) {
    const int64_t n = 4 + static_cast<int64_t>(rng() % 5);
    const int64_t base = 1 + static_cast<int64_t>(rng() % (cluster_tokens / n));
    const int64_t spread = 1 + base / 20;
    std::vector<int64_t> lengths;
    for (int64_t k = 0; k < n; ++k)
      lengths.push_back(std::max<int64_t>(1, base + static_cast<int64_t>(rng() % (2 * spread + 1)) - spread));
    return lengths;
  });
}

// How close a solver came to the optimum over the instances checked.
struct Tally {
  int optimal = 0, missed = 0;  // missed: no plan
  double worst = 1;
  void add(double makespan, double optimum) {
    worst = std::max(worst, makespan / optimum);
    optimal += makespan <= optimum * (1 + 1e-9);
  }
};

// The fast solver finds a valid plan within its bound of the optimum on every instance. Its heuristic alone (what
// micro-batches of more than FastSolver::kExactUpTo sequences get) is reported beside it, valid but not held to the
// bound: it misses it on a few instances where memory is nearly full (4 of 4,800 of these kinds tried).
void check_fast_within_bound(const std::vector<Instance>& all, const std::string& kind) {
  const FastSolver fast, heuristic(0, /*exact_up_to=*/0);
  Tally fast_tally, heuristic_tally;
  for (const Instance& inst : all) {
    const auto cost = test::small_cluster(inst.nodes, inst.per_node);
    const double optimum = test::exhaustive_makespan(inst.lengths, cost);
    INFO(kind << ": cluster " << inst.nodes << "x" << inst.per_node << ", lengths "
              << fmt::format("{}", fmt::join(inst.lengths, " ")) << ", optimum " << optimum);
    auto f = fast.solve(inst.lengths, cost);
    REQUIRE(f.has_value());
    REQUIRE_NOTHROW(check_micro_batch(*f, inst.lengths, cost));
    CHECK(f->makespan_s >= optimum * (1 - 1e-9));
    CHECK(f->makespan_s <= optimum * kFastBound);
    fast_tally.add(f->makespan_s, optimum);
    auto h = heuristic.solve(inst.lengths, cost);
    if (!h) {
      ++heuristic_tally.missed;
      continue;
    }
    REQUIRE_NOTHROW(check_micro_batch(*h, inst.lengths, cost));
    CHECK(h->makespan_s >= optimum * (1 - 1e-9));
    heuristic_tally.add(h->makespan_s, optimum);
  }
  WARN("fast solver, " << kind << ": optimal on " << fast_tally.optimal << " of " << all.size()
       << " instances, worst ratio " << fast_tally.worst << "; its heuristic alone: optimal on "
       << heuristic_tally.optimal << ", no plan on " << heuristic_tally.missed << ", worst ratio "
       << heuristic_tally.worst);
}

TEST_CASE("the MILP solver finds the optimum and the fast solver stays within its bound", "[flexsp]") {
  const MilpSolver milp({.time_limit_s = 60, .buckets = 16});
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
  }
  check_fast_within_bound(all, "random");
}

TEST_CASE("the fast solver stays within its bound where memory is tight", "[flexsp]") {
  check_fast_within_bound(tight_instances(25), "tight memory");
}

TEST_CASE("the fast solver stays within its bound on sequences of similar length", "[flexsp]") {
  check_fast_within_bound(similar_instances(25), "similar lengths");
}

// Above the exact search's size (FastSolver::kExactUpTo), where every batch of real data lands, the fast solver is
// its heuristic alone. Held to a stated bound of the optimum there too: the MILP's, proven optimal with a bucket a
// sequence (no padding), on long-tailed instances of 13-14 sequences on 2-8 devices; an instance CBC cannot prove
// within its time limit is drawn again (at most as many again), so the test stays under a minute.
TEST_CASE("above the exact search's size the fast solver stays within its bound of the MILP's optimum", "[flexsp]") {
  const FastSolver fast;
  const MilpSolver milp({.time_limit_s = 5, .buckets = 16});
  std::mt19937_64 rng(23);
  Tally tally;
  int checked = 0, unproven = 0;
  while (checked < kLargeInstances) {
    auto [nodes, per_node] = kClusters[rng() % kClusters.size()];
    const auto cost = test::small_cluster(nodes, per_node);
    const int64_t n = static_cast<int64_t>(FastSolver::kExactUpTo) + 1 + static_cast<int64_t>(rng() % 2);
    const int64_t longest = cost.token_capacity(cost.max_degree());
    std::vector<int64_t> lengths;
    for (int64_t k = 0; k < n; ++k)  // mostly short, sometimes long, as instances() draws them
      lengths.push_back(rng() % 4 == 0 ? 1 + static_cast<int64_t>(rng() % longest)
                                       : 1 + static_cast<int64_t>(rng() % 160));
    auto m = milp.solve(lengths, cost);
    if (!m) continue;  // no plan fits
    INFO("cluster " << nodes << "x" << per_node << ", lengths " << fmt::format("{}", fmt::join(lengths, " ")));
    if (!m->proven_optimal) {
      REQUIRE(++unproven <= kLargeInstances);
      continue;
    }
    auto f = fast.solve(lengths, cost);
    REQUIRE(f.has_value());
    REQUIRE_NOTHROW(check_micro_batch(*f, lengths, cost));
    CHECK(f->makespan_s >= m->makespan_s * (1 - 1e-9));
    CHECK(f->makespan_s <= m->makespan_s * kFastBound);
    tally.add(f->makespan_s, m->makespan_s);
    ++checked;
  }
  WARN("fast solver above the exact search: optimal on " << tally.optimal << " of " << checked << ", worst ratio "
       << tally.worst << "; " << unproven << " instance(s) the MILP did not prove in its time limit");
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
    for (const GroupPlan& g : plan->groups) CHECK(g.degree == d);
  }
}

}  // namespace
}  // namespace trident::flexsp
