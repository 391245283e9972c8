#pragma once
// Sequences on a fixed set of groups, as both solvers build and improve them (internal to parallel/flexsp).
#include <cstdint>
#include <span>
#include <vector>

#include "parallel/cost/group_cost_model.h"
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
Assignment empty_assignment(std::span<const int64_t> counts, const cost::GroupCostModel& cost);

// Greedy longest-first: each sequence of `order` (longest first) goes to the slot that would finish earliest with
// it among those with room. False when a sequence fits no slot. Without `record` only times and tokens are kept
// (scoring a layout needs no more, and skipping the lists saves most of the cost).
bool assign_longest_first(std::span<const int64_t> lengths, std::span<const int64_t> order, Assignment& a,
                          bool record = true);

// Which slots target packing fills first: the smallest degrees (the least device time), or the largest (the long
// sequences take the big groups' memory and leave small groups to short sequences that fill them).
enum class Prefer { small_groups, large_groups };

// Packing to a target makespan: each sequence of `order` (longest first) goes to the preferred degree's slot that
// has room and stays within `target`, the fullest such slot first. False when some sequence has no such slot.
// Bisection on the target finds plans greedy longest-first misses, e.g. a sequence that should take a small group's
// longer time because the makespan is set elsewhere anyway, or a packing where memory is tight.
bool assign_to_target(std::span<const int64_t> lengths, std::span<const int64_t> order, Assignment& a, double target,
                      Prefer prefer, bool record = true);

// Memory repair: moves a sequence off a slot over its capacity, or swaps it with a shorter one of another slot,
// while that lowers the tokens over capacity summed over the slots (the largest such drop first, at most a few moves
// per sequence); true when no slot is over. Placing by time alone and then repairing finds the tight packings that
// placing under memory misses, e.g. four similar sequences that only just fit a group together.
bool repair_memory(std::span<const int64_t> lengths, Assignment& a);

// Local search: moves a sequence off the slowest slot, or swaps one of its sequences with another slot's, while that
// lowers the larger of the two slots' times; stops when no such move is left (or after a bounded number of moves).
void improve(std::span<const int64_t> lengths, Assignment& a);

MicroBatchPlan to_plan(const Assignment& a, std::span<const int64_t> lengths, const cost::GroupCostModel& cost);

}  // namespace trident::flexsp
