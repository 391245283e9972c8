#pragma once
// What the FlexSP planners produce: for each micro-batch, power-of-two sequence-parallel groups of devices, the
// sequences each group runs (Ulysses inside), and the cost model's time for each group. Groups are buddy-aligned
// and allocated largest first: a group of degree d starts at a multiple of d, so it crosses nodes only when d is
// larger than a node (docs/methods.md §3.4, "Placement, communicators, execution").
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "parallel/cost/group_cost_model.h"

namespace trident::flexsp {

// One sequence-parallel group of a micro-batch's plan: its devices and the sequences it runs.
struct GroupPlan {
  int64_t degree = 0;        // devices, a power of two
  int64_t first_device = 0;  // devices [first_device, first_device + degree)
  std::vector<int64_t> sequences;  // indices into the lengths the plan was made for
  int64_t tokens = 0;
  double time_s = 0;  // cost model estimate
};

struct MicroBatchPlan {
  std::vector<GroupPlan> groups;  // by degree, largest first
  double makespan_s = 0;          // the slowest group
  bool proven_optimal = false;    // the MILP solver proved this micro-batch's bucketed plan optimal
};

// A micro-batch from (degree, sequences) pairs: drops empty groups, orders by degree (largest first), lays groups
// at consecutive device offsets and fills in tokens and times from the cost model.
MicroBatchPlan make_micro_batch(std::vector<std::pair<int64_t, std::vector<int64_t>>> groups,
                                std::span<const int64_t> lengths, const cost::GroupCostModel& cost);

// Throws RuntimeError describing the first violation: a group that is not a power of two or not aligned, more
// devices than the cluster has, a group over its memory capacity, or a sequence of `expected` (all indices
// 0..lengths.size()-1 when empty) not placed exactly once.
void check_micro_batch(const MicroBatchPlan& plan, std::span<const int64_t> lengths, const cost::GroupCostModel& cost,
                       std::span<const int64_t> expected = {});

// "<32, 16, 8x2>": the degrees of the groups, largest first.
std::string describe_groups(const MicroBatchPlan& plan);

}  // namespace trident::flexsp
