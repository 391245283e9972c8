#pragma once
// The default micro-batch solver: greedy longest-first onto the least-loaded power-of-two groups, with the set of
// group degrees found by hill climbing, then sequence moves and swaps (papers.md §3.6's "fast planner").
//
// 1. Layouts: how many groups of each power-of-two degree (all devices used). Start from each homogeneous layout
//    whose degree holds the longest sequence.
// 2. Score a layout by placing sequences longest first, each on the group that would finish earliest with it among
//    those with memory room (assignment.h), and taking the slowest group.
// 3. Hill climb: split one group into two of half the degree, or merge two into one of double the degree, while the
//    best such change lowers the score.
// 4. Improve the best placement by moving or swapping sequences off the slowest group.
// With `only_degree` set, every group has that degree (steps 1 and 3 are skipped): the homogeneous baselines.
#include "parallel/flexsp/solver.h"

namespace trident::flexsp {

class FastSolver final : public MicroBatchSolver {
 public:
  explicit FastSolver(int64_t only_degree = 0) : only_degree_(only_degree) {}
  std::string name() const override { return "fast"; }
  std::optional<MicroBatchPlan> solve(std::span<const int64_t> lengths, const cost::CostModel& cost) const override;

 private:
  int64_t only_degree_;
};

}  // namespace trident::flexsp
