#pragma once
// Sequences on a fixed set of groups, as both solvers build and improve them (internal to parallel/flexsp).
#include <cstdint>
#include <span>
#include <vector>

#include "parallel/cost/cost_model.h"
#include "parallel/flexsp/plan.h"

namespace trident::flexsp {

struct Slot {
  int64_t degree = 0;
  int64_t capacity = 0;  // tokens
  cost::DegreeCost cost;
  std::vector<int64_t> sequences;  // filled only when the assignment records them (see assign_longest_first)
  int64_t count = 0;               // sequences held
  int64_t tokens = 0;
  double time = 0;  // 0 while empty

  // The time after adding (sign +1) or removing (-1) a sequence of s tokens.
  double time_with(int64_t s, int sign) const;
};

struct Assignment {
  std::vector<Slot> slots;
  double makespan() const;
};

// Empty slots for `counts[l]` groups of degree 2^l each.
Assignment empty_assignment(std::span<const int64_t> counts, const cost::CostModel& cost);

// Greedy longest-first: each sequence of `order` (longest first) goes to the slot that would finish earliest with
// it among those with room. False when a sequence fits no slot. Without `record` only times and tokens are kept
// (scoring a layout needs no more, and skipping the lists saves most of the cost).
bool assign_longest_first(std::span<const int64_t> lengths, std::span<const int64_t> order, Assignment& a,
                          bool record = true);

// Packing to a target makespan: each sequence of `order` (longest first) goes to the smallest-degree slot (the
// least device time) that has room and stays within `target`, the fullest such slot first. False when some
// sequence has no such slot. Bisection on the target finds plans greedy longest-first misses, e.g. a sequence that
// should take a small group's longer time because the makespan is set elsewhere anyway.
bool assign_to_target(std::span<const int64_t> lengths, std::span<const int64_t> order, Assignment& a, double target,
                      bool record = true);

// Local search: moves a sequence off the slowest slot, or swaps one of its sequences with another slot's, while that
// lowers the larger of the two slots' times; stops when no such move is left (or after a bounded number of moves).
void improve(std::span<const int64_t> lengths, Assignment& a);

MicroBatchPlan to_plan(const Assignment& a, std::span<const int64_t> lengths, const cost::CostModel& cost);

}  // namespace trident::flexsp
