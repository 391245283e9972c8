#pragma once
// The MILP of docs/methods.md §3.1 in its bucketed form, solved by COIN-OR CBC (C API), time-limited and warm-started
// from the fast solver's plan.
//
// Virtual groups: floor(G/d) candidates for each power-of-two degree d. Variables: C (makespan), m_p in {0,1}
// (group p used), integer A_qp >= 0 (sequences of bucket q on group p; absent when bucket q's length does not fit a
// group of degree d_p). Bucket lengths and counts come from the padding-minimising DP (bucketing.h). Time counts
// each sequence at its bucket's longest length s_q (an upper bound); memory at its shortest min_q, so the fast
// plan is always a feasible MIP start (at the longest, padding can push a full group over its capacity and CBC
// would discard the start); the real lengths are checked against memory when the solution is read back.
//   minimise C
//   overhead(d_p) m_p + sum_q A_qp (per_token2(d_p) s_q^2 + per_token(d_p) s_q) <= C    for all p   (time)
//   sum_q A_qp min_q <= capacity(d_p) m_p                                             for all p   (memory; links A to m)
//   sum_p d_p m_p <= G                                                                            (devices)
//   sum_p A_qp = count_q                                                              for all q   (each sequence once)
//   m_p >= m_p+1 for consecutive virtual groups of one degree                                     (symmetry)
// The solution's counts are turned back into real sequences bucket by bucket, improved by the same local search
// as the fast solver, and never returned worse than (or, over memory, instead of) the warm start. With no more
// distinct lengths than buckets the bucketed problem is the exact one, and a proven-optimal CBC result is the optimum.
#include "parallel/flexsp/milp_model.h"
#include "parallel/flexsp/solver.h"

namespace trident::flexsp {

struct MilpOptions {
  double time_limit_s = 5.0;  // CBC's limit per micro-batch; the best plan found by then is used
  int64_t buckets = 16;       // Q
};

class MilpSolver final : public MicroBatchSolver {
 public:
  explicit MilpSolver(MilpOptions options = {}) : options_(options) {}
  std::string name() const override { return "milp"; }
  std::optional<MicroBatchPlan> solve(std::span<const int64_t> lengths,
                                      const cost::GroupCostModel& cost) const override;

 private:
  MilpOptions options_;
};

// The model MilpSolver solves for this micro-batch (warm start included), for comparing solvers on it.
MilpModel milp_model(std::span<const int64_t> lengths, const cost::GroupCostModel& cost, const MilpOptions& options);

}  // namespace trident::flexsp
