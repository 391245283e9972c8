#pragma once
// Planning one global batch (docs/methods.md §3.2): sequences too long for the whole cluster are handled by the length
// policy; the rest are sorted longest first, cut by the sequence blaster into M micro-batches for each M in
// [M_min, M_min + extra) (M_min = ceil(tokens / cluster token capacity)), every micro-batch is solved, and the M
// with the least total time wins. When none of those M has a plan, M grows until one does (at most one micro-batch
// per sequence, which always fits), so planning always ends.
//
// `choose` picks M (the fast solver: cheap enough to try every M); `refine`, when given (the MILP), re-solves the
// chosen M's micro-batches. The baselines use the same machinery with one degree for every group.
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "parallel/cost/group_cost_model.h"
#include "parallel/flexsp/plan.h"
#include "parallel/flexsp/solver.h"

namespace trident::flexsp {

// What happens to a sequence longer than the whole cluster holds (parallel.flexsp.too_long).
enum class TooLong { error, drop, split };
TooLong parse_too_long(const std::string& name);  // "error" | "drop" | "split"

// A piece of a batch's sequence the planner places: all of it, or (split policy) one cut of it.
struct Piece {
  int64_t sequence = 0;  // index in the batch
  int64_t offset = 0;    // first token within the sequence
  int64_t length = 0;
};

// The pieces to plan: each sequence whole, except those over `max_tokens`: a RuntimeError (error: naming the
// sequence, its length and the limit), left out (drop), or cut into pieces of at most max_tokens (split).
std::vector<Piece> apply_length_policy(std::span<const int64_t> lengths, int64_t max_tokens, TooLong policy);

struct BatchPlan {
  std::vector<int64_t> lengths;  // what was planned (piece lengths); group sequences index this
  std::vector<MicroBatchPlan> micro_batches;
  double time_s = 0;  // sum of the micro-batches' makespans
};

// Throws RuntimeError unless every micro-batch passes check_micro_batch and every sequence of the batch is placed
// exactly once over all micro-batches.
void check_batch_plan(const BatchPlan& plan, const cost::GroupCostModel& cost);

// Plans `lengths` (each must fit a group of all devices: apply_length_policy first). RuntimeError if no plan.
BatchPlan plan_batch(std::span<const int64_t> lengths, const cost::GroupCostModel& cost, const MicroBatchSolver& choose,
                     const MicroBatchSolver* refine = nullptr, int64_t extra_micro_batches = 4);

// Every group of degree d (the static-SP baseline, as DeepSpeed-Ulysses with SP = d and data parallelism over the
// G/d replicas). RuntimeError if d cannot hold the longest sequence.
BatchPlan plan_homogeneous(std::span<const int64_t> lengths, const cost::GroupCostModel& cost, int64_t degree,
                           int64_t extra_micro_batches = 4);

// The best single degree for this batch (BatchAda): plan_homogeneous for every degree that holds the longest
// sequence, the fastest kept. `degree` is set to the one chosen; `times`, when given, gets each degree's time.
BatchPlan plan_best_homogeneous(std::span<const int64_t> lengths, const cost::GroupCostModel& cost, int64_t& degree,
                                int64_t extra_micro_batches = 4, std::map<int64_t, double>* times = nullptr);

// The plans a FlexSP step chooses between, all timed by one cost model (in training, the corrected one).
struct PlanChoice {
  enum class Kind { flexsp, batchada };
  BatchPlan plan;  // the fastest
  Kind kind = Kind::flexsp;
  double flexsp_s = kNotPlanned;    // FlexSP's mixed plan
  double batchada_s = kNotPlanned;  // the best single degree's plan
  int64_t batchada_degree = 0;
  double static_s = kNotPlanned;    // static SP: every group of static_degree (0: none asked, or it cannot hold the
  int64_t static_degree = 0;        // longest sequence)
  static constexpr double kNotPlanned = -1;
};
const char* plan_kind_name(PlanChoice::Kind kind);  // "flexsp", "batchada"

// FlexSP's plan of a batch, never slower under `cost` than a plan it had: plan_batch with `mixed` (and `refine`),
// or plan_best_homogeneous's plan (BatchAda) when that is faster (the fast solver is a heuristic and can miss a
// homogeneous layout where memory is tight, and the corrections can make small groups slower than they look).
// Without `mixed` (parallel.flexsp.degrees: single) BatchAda's plan alone. Static SP's plan, every group of
// `static_degree`, is one of BatchAda's when that degree holds the longest sequence, so it is never faster; its time
// is reported beside the others. FlexSP's plan is kept on ties.
PlanChoice choose_plan(std::span<const int64_t> lengths, const cost::GroupCostModel& cost,
                       const MicroBatchSolver* mixed, const MicroBatchSolver* refine = nullptr,
                       int64_t extra_micro_batches = 4, int64_t static_degree = 0);

// choose_plan's plan; `fell_back`, when given, says whether the single-degree plan was taken.
BatchPlan plan_flexsp(std::span<const int64_t> lengths, const cost::GroupCostModel& cost,
                      const MicroBatchSolver& choose, const MicroBatchSolver* refine = nullptr,
                      int64_t extra_micro_batches = 4, bool* fell_back = nullptr);

}  // namespace trident::flexsp
