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
  std::vector<int64_t> sequences;
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
// it among those with room. False when a sequence fits no slot.
bool assign_longest_first(std::span<const int64_t> lengths, std::span<const int64_t> order, Assignment& a);

// Local search: moves a sequence off the slowest slot, or swaps one of its sequences with another slot's, while that
// lowers the larger of the two slots' times; stops when no such move is left (or after a bounded number of moves).
void improve(std::span<const int64_t> lengths, Assignment& a);

MicroBatchPlan to_plan(const Assignment& a, std::span<const int64_t> lengths, const cost::CostModel& cost);

}  // namespace trident::flexsp
