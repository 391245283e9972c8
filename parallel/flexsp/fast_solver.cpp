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

// floor(devices / 2^level) groups of that degree, the rest of the devices in the largest groups that fit.
Counts homogeneous(int64_t level, int64_t levels, int64_t devices) {
  Counts c(levels, 0);
  c[level] = devices >> level;
  int64_t rest = devices - (c[level] << level);
  for (int64_t l = level - 1; l >= 0; --l)
    if (rest >= (int64_t{1} << l)) c[l] += 1, rest -= int64_t{1} << l;
  return c;
}

// The makespan of greedy longest-first on a layout (infinite when it finds no room for some sequence).
double score(const Counts& counts, std::span<const int64_t> lengths, std::span<const int64_t> order,
             const cost::CostModel& cost) {
  Assignment a = empty_assignment(counts, cost);
  if (!assign_longest_first(lengths, order, a, /*record=*/false)) return std::numeric_limits<double>::infinity();
  return a.makespan();
}

}  // namespace

std::optional<MicroBatchPlan> FastSolver::solve(std::span<const int64_t> lengths, const cost::CostModel& cost) const {
  if (lengths.empty()) return MicroBatchPlan{};
  std::vector<int64_t> order(lengths.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return lengths[a] > lengths[b]; });
  const int64_t longest_degree = cost.min_degree(lengths[order[0]]);
  if (longest_degree == 0) return std::nullopt;
  const int64_t levels = std::countr_zero(static_cast<uint64_t>(cost.max_degree())) + 1;
  const int64_t first = std::countr_zero(static_cast<uint64_t>(longest_degree));

  constexpr double kNone = std::numeric_limits<double>::infinity();
  Counts best_counts;
  double best = kNone;
  std::vector<std::pair<double, Counts>> seen;  // every layout scored, with its greedy makespan
  std::map<Counts, double> scores;
  if (only_degree_ > 0) {
    if (only_degree_ < longest_degree || only_degree_ > cost.max_degree()) return std::nullopt;
    best_counts = homogeneous(std::countr_zero(static_cast<uint64_t>(only_degree_)), levels, cost.devices());
    best = score(best_counts, lengths, order, cost);
    seen.emplace_back(best, best_counts);
  } else {
    // Hill climb from the best few homogeneous layouts (the best one alone sometimes climbs to a poorer local
    // optimum than a runner-up; on the tests' instances three starts do as well as all of them).
    std::vector<std::pair<double, Counts>> starts;
    for (int64_t level = first; level < levels; ++level) {
      Counts counts = homogeneous(level, levels, cost.devices());
      starts.emplace_back(score(counts, lengths, order, cost), counts);
    }
    seen = starts;
    for (const auto& [t, c] : starts) scores.emplace(c, t);
    std::stable_sort(starts.begin(), starts.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    starts.resize(std::min<size_t>(starts.size(), kStarts));
    for (auto& [current, counts] : starts) {
      for (;;) {  // hill climb over split / merge
        double step = kNone;
        Counts step_counts;
        auto consider = [&](const Counts& c) {
          auto [it, fresh] = scores.try_emplace(c, 0.0);  // climbs from different starts meet the same layouts
          if (fresh) {
            it->second = score(c, lengths, order, cost);
            seen.emplace_back(it->second, c);
          }
          if (it->second < step) step = it->second, step_counts = c;
        };
        // split one group into two of half the degree, or merge two into one of double the degree
        for (int64_t l = 0; l < levels; ++l) {
          if (l > 0 && counts[l] >= 1) {
            Counts c = counts;
            c[l] -= 1, c[l - 1] += 2;
            consider(c);
          }
          if (l + 1 < levels && counts[l] >= 2) {
            Counts c = counts;
            c[l] -= 2, c[l + 1] += 1;
            consider(c);
          }
        }
        if (!(step < current)) break;
        current = step;
        counts = step_counts;
      }
      if (current < best) best = current, best_counts = counts;
    }
  }
  if (!(best < kNone)) return std::nullopt;
  // Polish: on the best layouts seen, bisect a target makespan for assign_to_target below the greedy one.
  std::stable_sort(seen.begin(), seen.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  seen.erase(std::unique(seen.begin(), seen.end(), [](const auto& a, const auto& b) { return a.second == b.second; }),
             seen.end());
  double best_target = kNone;
  Counts target_counts;
  for (size_t i = 0; i < std::min(seen.size(), kPolished); ++i) {
    const auto& [greedy, counts] = seen[i];
    if (!(greedy < kNone)) break;
    double lo = greedy / 2, hi = greedy;
    for (int step = 0; step < kBisections; ++step) {
      const double mid = (lo + hi) / 2;
      Assignment a = empty_assignment(counts, cost);
      (assign_to_target(lengths, order, a, mid, false) ? hi : lo) = mid;
    }
    if (hi < std::min(best, best_target)) best_target = hi, target_counts = counts;
  }
  // Both candidates get the local search; the better one wins.
  Assignment assignment = empty_assignment(best_counts, cost);
  assign_longest_first(lengths, order, assignment);
  improve(lengths, assignment);
  if (best_target < kNone) {
    Assignment polished = empty_assignment(target_counts, cost);
    assign_to_target(lengths, order, polished, best_target);
    improve(lengths, polished);
    if (polished.makespan() < assignment.makespan()) assignment = std::move(polished);
  }
  return to_plan(assignment, lengths, cost);
}

}  // namespace trident::flexsp
