#include "parallel/flexsp/fast_solver.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <map>
#include <numeric>

#include "parallel/flexsp/assignment.h"

namespace trident::flexsp {

namespace {

using Counts = std::vector<int64_t>;  // counts[l]: groups of degree 2^l
constexpr size_t kStarts = 3;
constexpr size_t kPolished = 4;   // best layouts polished by target bisection
constexpr int kBisections = 10;   // target precision: greedy makespan / 2^11
constexpr double kNone = std::numeric_limits<double>::infinity();

// floor(devices / 2^level) groups of that degree, the rest of the devices in the largest groups that fit.
Counts homogeneous(int64_t level, int64_t levels, int64_t devices) {
  Counts c(levels, 0);
  c[level] = devices >> level;
  int64_t rest = devices - (c[level] << level);
  for (int64_t l = level - 1; l >= 0; --l)
    if (rest >= (int64_t{1} << l)) c[l] += 1, rest -= int64_t{1} << l;
  return c;
}

// Layouts scored by greedy longest-first (infinite when it finds no room for some sequence), each scored once.
class LayoutSearch {
 public:
  LayoutSearch(std::span<const int64_t> lengths, std::span<const int64_t> order, const cost::CostModel& cost)
      : lengths_(lengths), order_(order), cost_(cost),
        levels_(std::countr_zero(static_cast<uint64_t>(cost.max_degree())) + 1) {}

  int64_t levels() const { return levels_; }

  double score(const Counts& counts) {
    auto [it, fresh] = scores_.try_emplace(counts, 0.0);  // climbs from different starts meet the same layouts
    if (fresh) {
      Assignment a = empty_assignment(counts, cost_);
      it->second = assign_longest_first(lengths_, order_, a, /*record=*/false) ? a.makespan() : kNone;
    }
    return it->second;
  }

  // Hill climbing: the best of "split one group into two of half the degree" and "merge two into one of double
  // the degree" while it lowers the score.
  Counts climb(Counts counts) {
    double current = score(counts);
    for (;;) {
      double best = kNone;
      Counts best_counts;
      auto consider = [&](Counts c) {
        if (double t = score(c); t < best) best = t, best_counts = std::move(c);
      };
      for (int64_t l = 0; l < levels_; ++l) {
        if (l > 0 && counts[l] >= 1) {
          Counts c = counts;
          c[l] -= 1, c[l - 1] += 2;
          consider(std::move(c));
        }
        if (l + 1 < levels_ && counts[l] >= 2) {
          Counts c = counts;
          c[l] -= 2, c[l + 1] += 1;
          consider(std::move(c));
        }
      }
      if (!(best < current)) return counts;
      current = best;
      counts = std::move(best_counts);
    }
  }

  // Every layout scored so far, best first.
  std::vector<std::pair<double, Counts>> ranked() const {
    std::vector<std::pair<double, Counts>> out;
    for (const auto& [counts, t] : scores_) out.emplace_back(t, counts);
    std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    return out;
  }

  // The lowest target makespan (bisected below the greedy one) assign_to_target meets on `counts`; kNone if none.
  double polish(const Counts& counts) const {
    const double greedy = scores_.at(counts);
    double lo = greedy / 2, hi = greedy;
    bool met = false;
    for (int step = 0; step < kBisections; ++step) {
      const double mid = (lo + hi) / 2;
      Assignment a = empty_assignment(counts, cost_);
      if (assign_to_target(lengths_, order_, a, mid, /*record=*/false)) hi = mid, met = true; else lo = mid;
    }
    return met ? hi : kNone;
  }

 private:
  std::span<const int64_t> lengths_, order_;
  const cost::CostModel& cost_;
  int64_t levels_;
  std::map<Counts, double> scores_;
};

}  // namespace

std::optional<MicroBatchPlan> FastSolver::solve(std::span<const int64_t> lengths, const cost::CostModel& cost) const {
  if (lengths.empty()) return MicroBatchPlan{};
  std::vector<int64_t> order(lengths.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return lengths[a] > lengths[b]; });
  const int64_t longest_degree = cost.min_degree(lengths[order[0]]);
  if (longest_degree == 0) return std::nullopt;
  LayoutSearch search(lengths, order, cost);
  const int64_t first = std::countr_zero(static_cast<uint64_t>(longest_degree));

  Counts best;
  if (only_degree_ > 0) {
    if (only_degree_ < longest_degree || only_degree_ > cost.max_degree()) return std::nullopt;
    best = homogeneous(std::countr_zero(static_cast<uint64_t>(only_degree_)), search.levels(), cost.devices());
  } else {
    // Climb from the best few homogeneous layouts (the best one alone sometimes climbs to a poorer local optimum
    // than a runner-up; on the tests' instances three starts do as well as all of them).
    std::vector<std::pair<double, Counts>> starts;
    for (int64_t level = first; level < search.levels(); ++level) {
      Counts counts = homogeneous(level, search.levels(), cost.devices());
      starts.emplace_back(search.score(counts), counts);
    }
    std::stable_sort(starts.begin(), starts.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    starts.resize(std::min(starts.size(), kStarts));
    for (const auto& start : starts) {
      Counts top = search.climb(start.second);
      if (best.empty() || search.score(top) < search.score(best)) best = std::move(top);
    }
  }
  if (!(search.score(best) < kNone)) return std::nullopt;

  // Greedy on the best layout, and target packing on the best few layouts seen; both get the local search and
  // the better plan wins.
  Assignment plan = empty_assignment(best, cost);
  assign_longest_first(lengths, order, plan);
  improve(lengths, plan);
  double best_target = kNone;
  Counts target_counts;
  const auto ranked = search.ranked();
  for (size_t i = 0; i < std::min(ranked.size(), kPolished) && ranked[i].first < kNone; ++i)
    if (double t = search.polish(ranked[i].second); t < best_target) best_target = t, target_counts = ranked[i].second;
  if (best_target < search.score(best)) {
    Assignment polished = empty_assignment(target_counts, cost);
    assign_to_target(lengths, order, polished, best_target);
    improve(lengths, polished);
    if (polished.makespan() < plan.makespan()) plan = std::move(polished);
  }
  return to_plan(plan, lengths, cost);
}

}  // namespace trident::flexsp
