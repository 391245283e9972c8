#include "parallel/flexsp/fast_solver.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <numeric>

#include "parallel/flexsp/assignment.h"

namespace trident::flexsp {

namespace {

using Counts = std::vector<int64_t>;  // counts[l]: groups of degree 2^l
constexpr size_t kStarts = 3;

struct Scored {
  double makespan = std::numeric_limits<double>::infinity();
  Assignment assignment;
};

// floor(devices / 2^level) groups of that degree, the rest of the devices in the largest groups that fit.
Counts homogeneous(int64_t level, int64_t levels, int64_t devices) {
  Counts c(levels, 0);
  c[level] = devices >> level;
  int64_t rest = devices - (c[level] << level);
  for (int64_t l = level - 1; l >= 0; --l)
    if (rest >= (int64_t{1} << l)) c[l] += 1, rest -= int64_t{1} << l;
  return c;
}

Scored score(const Counts& counts, std::span<const int64_t> lengths, std::span<const int64_t> order,
             const cost::CostModel& cost) {
  Scored s;
  s.assignment = empty_assignment(counts, cost);
  if (assign_longest_first(lengths, order, s.assignment)) s.makespan = s.assignment.makespan();
  return s;
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

  Scored best;
  if (only_degree_ > 0) {
    if (only_degree_ < longest_degree || only_degree_ > cost.max_degree()) return std::nullopt;
    best = score(homogeneous(std::countr_zero(static_cast<uint64_t>(only_degree_)), levels, cost.devices()), lengths,
                 order, cost);
  } else {
    // Hill climb from the best few homogeneous layouts (the best one alone sometimes climbs to a poorer local
    // optimum than a runner-up; on the tests' instances three starts do as well as all of them).
    std::vector<std::pair<double, Counts>> starts;
    for (int64_t level = first; level < levels; ++level) {
      Counts counts = homogeneous(level, levels, cost.devices());
      starts.emplace_back(score(counts, lengths, order, cost).makespan, counts);
    }
    std::stable_sort(starts.begin(), starts.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    starts.resize(std::min<size_t>(starts.size(), kStarts));
    for (auto& [unused, counts] : starts) {
      Scored current = score(counts, lengths, order, cost);
      for (;;) {  // hill climb over split / merge
        Scored step;
        Counts step_counts;
        for (int64_t l = 0; l < levels; ++l) {
          if (l > 0 && counts[l] >= 1) {
            Counts c = counts;
            c[l] -= 1, c[l - 1] += 2;
            if (Scored s = score(c, lengths, order, cost); s.makespan < step.makespan) step = std::move(s), step_counts = c;
          }
          if (l + 1 < levels && counts[l] >= 2) {
            Counts c = counts;
            c[l] -= 2, c[l + 1] += 1;
            if (Scored s = score(c, lengths, order, cost); s.makespan < step.makespan) step = std::move(s), step_counts = c;
          }
        }
        if (!(step.makespan < current.makespan)) break;
        current = std::move(step);
        counts = step_counts;
      }
      if (current.makespan < best.makespan) best = std::move(current);
    }
  }
  if (!(best.makespan < std::numeric_limits<double>::infinity())) return std::nullopt;
  improve(lengths, best.assignment);
  return to_plan(best.assignment, lengths, cost);
}

}  // namespace trident::flexsp
