#pragma once
// The default micro-batch solver: greedy longest-first onto the least-loaded power-of-two groups, with the set of
// group degrees found by hill climbing, then sequence moves and swaps (docs/methods.md §3.6, "Planning time"), and
// an exact search where the micro-batch has few sequences.
//
// 1. Layouts: how many groups of each power-of-two degree (all devices used). Start from the three best homogeneous
//    layouts whose degree holds the longest sequence, and from each of those that has no plan.
// 2. Score a layout by placing sequences longest first, each on the group that would finish earliest with it among
//    those with memory room (assignment.h), and taking the slowest group. Where that runs out of memory: packing to
//    a target makespan, or placing by time alone and repairing memory.
// 3. Hill climb: split one group into two of half the degree, or merge two into one of double the degree, while the
//    best such change lowers the score.
// 4. Pack the best few layouts to their lowest target makespans too, and form groups while packing (no layout
//    given); improve each plan by moving or swapping sequences off the slowest group; keep the best.
// 5. With at most `exact_up_to` sequences: branch and bound over every placement, pruned by that plan's makespan.
// With `only_degree` set, every group has that degree (steps 1, 3, 5 and group forming are skipped): the homogeneous
// baselines.
#include "parallel/flexsp/solver.h"

namespace trident::flexsp {

class FastSolver final : public MicroBatchSolver {
 public:
  // Micro-batches of at most this many sequences get the exact search: up to 12 it ended well within its node
  // budget on every instance tried (13 sequences already took up to a million nodes).
  static constexpr size_t kExactUpTo = 12;

  explicit FastSolver(int64_t only_degree = 0, size_t exact_up_to = kExactUpTo)
      : only_degree_(only_degree), exact_up_to_(exact_up_to) {}
  std::string name() const override { return "fast"; }
  std::optional<MicroBatchPlan> solve(std::span<const int64_t> lengths,
                                      const cost::GroupCostModel& cost) const override;

 private:
  int64_t only_degree_;
  size_t exact_up_to_;
};

}  // namespace trident::flexsp
