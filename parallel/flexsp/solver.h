#pragma once
// One micro-batch's placement problem (docs/methods.md §3.1): put every sequence on a power-of-two group, groups using
// at most all devices, each group within its memory capacity, minimising the slowest group's time. Two solvers
// implement it: FastSolver (fast_solver.h, the default) and MilpSolver (milp_solver.h, the quality reference).
// Solvers are pure functions of (lengths, cost model): no MPI, no global state.
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "parallel/cost/group_cost_model.h"
#include "parallel/flexsp/plan.h"

namespace trident::flexsp {

class MicroBatchSolver {
 public:
  virtual ~MicroBatchSolver() = default;
  virtual std::string name() const = 0;
  // A plan placing sequences 0 .. lengths.size()-1, or nullopt when this solver finds none that fits memory.
  virtual std::optional<MicroBatchPlan> solve(std::span<const int64_t> lengths,
                                              const cost::GroupCostModel& cost) const = 0;
};

}  // namespace trident::flexsp
