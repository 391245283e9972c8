#include "parallel/flexsp/planner.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>

#include "kernels/common/error.h"
#include "parallel/flexsp/blaster.h"
#include "parallel/flexsp/fast_solver.h"

namespace trident::flexsp {

TooLong parse_too_long(const std::string& name) {
  if (name == "error") return TooLong::error;
  if (name == "drop") return TooLong::drop;
  if (name == "split") return TooLong::split;
  throw_config_error("parallel.flexsp.too_long: '{}' is not allowed (allowed: error, drop, split)", name);
}

std::vector<Piece> apply_length_policy(std::span<const int64_t> lengths, int64_t max_tokens, TooLong policy) {
  std::vector<Piece> pieces;
  for (int64_t k = 0; k < static_cast<int64_t>(lengths.size()); ++k) {
    const int64_t s = lengths[k];
    if (s <= max_tokens) {
      pieces.push_back({k, 0, s});
    } else if (policy == TooLong::error) {
      throw_runtime_error("sequence {} of the batch has {} tokens; the whole cluster holds at most {} tokens of one "
                          "sequence (set parallel.flexsp.too_long to drop or split, or shorten the data)",
                          k, s, max_tokens);
    } else if (policy == TooLong::split) {
      for (int64_t offset = 0; offset < s; offset += max_tokens)
        pieces.push_back({k, offset, std::min(max_tokens, s - offset)});
    }
  }
  return pieces;
}

void check_batch_plan(const BatchPlan& plan, const cost::GroupCostModel& cost) {
  std::vector<int> placed(plan.lengths.size(), 0);
  for (const MicroBatchPlan& mb : plan.micro_batches) {
    std::vector<int64_t> own;
    for (const GroupPlan& g : mb.groups) own.insert(own.end(), g.sequences.begin(), g.sequences.end());
    if (own.empty()) throw_runtime_error("plan: an empty micro-batch");
    check_micro_batch(mb, plan.lengths, cost, own);
    for (int64_t k : own) ++placed[static_cast<size_t>(k)];
  }
  for (size_t k = 0; k < placed.size(); ++k)
    if (placed[k] != 1) throw_runtime_error("plan: sequence {} is placed {} times in the batch", k, placed[k]);
}

namespace {

struct Attempt {
  std::vector<MicroBatchPlan> micro_batches;
  double time_s = std::numeric_limits<double>::infinity();
};

// Solves each chunk of `order` (indices into lengths) cut by `bounds`; maps group sequences back to batch indices.
Attempt solve_chunks(std::span<const int64_t> lengths, std::span<const int64_t> order,
                     const std::vector<size_t>& bounds, const cost::GroupCostModel& cost,
                     const MicroBatchSolver& solver) {
  Attempt a;
  a.time_s = 0;
  for (size_t c = 0; c + 1 < bounds.size(); ++c) {
    std::vector<int64_t> chunk;
    for (size_t i = bounds[c]; i < bounds[c + 1]; ++i) chunk.push_back(lengths[order[i]]);
    std::optional<MicroBatchPlan> plan = solver.solve(chunk, cost);
    if (!plan) return {};
    for (GroupPlan& g : plan->groups)
      for (int64_t& k : g.sequences) k = order[bounds[c] + static_cast<size_t>(k)];
    a.time_s += plan->makespan_s;
    a.micro_batches.push_back(std::move(*plan));
  }
  return a;
}

}  // namespace

BatchPlan plan_batch(std::span<const int64_t> lengths, const cost::GroupCostModel& cost, const MicroBatchSolver& choose,
                     const MicroBatchSolver* refine, int64_t extra_micro_batches) {
  BatchPlan result;
  result.lengths.assign(lengths.begin(), lengths.end());
  if (lengths.empty()) return result;
  std::vector<int64_t> order(lengths.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return lengths[a] > lengths[b]; });
  std::vector<int64_t> sorted;
  for (int64_t k : order) sorted.push_back(lengths[k]);
  if (cost.min_degree(sorted[0]) == 0)
    throw_runtime_error("a sequence of {} tokens does not fit the whole cluster ({} tokens)", sorted[0],
                        cost.token_capacity(cost.max_degree()));

  const int64_t tokens = std::accumulate(sorted.begin(), sorted.end(), int64_t{0});
  const int64_t capacity = cost.token_capacity(1) * cost.devices();
  const int64_t n = static_cast<int64_t>(sorted.size());
  const int64_t m_min = std::min(n, std::max<int64_t>(1, (tokens + capacity - 1) / capacity));
  Attempt best;
  std::vector<size_t> best_bounds;
  for (int64_t m = m_min; m <= n; ++m) {
    if (m >= m_min + extra_micro_batches && best.time_s < std::numeric_limits<double>::infinity()) break;
    std::vector<size_t> bounds = split_min_max(sorted, m);
    Attempt a = solve_chunks(lengths, order, bounds, cost, choose);
    if (a.time_s < best.time_s) best = std::move(a), best_bounds = std::move(bounds);
  }
  if (best.micro_batches.empty())
    throw_runtime_error("no plan places this batch of {} sequences with the {} solver", n, choose.name());
  if (refine) {
    Attempt refined = solve_chunks(lengths, order, best_bounds, cost, *refine);
    if (!refined.micro_batches.empty()) best = std::move(refined);
  }
  result.micro_batches = std::move(best.micro_batches);
  result.time_s = best.time_s;
  return result;
}

BatchPlan plan_homogeneous(std::span<const int64_t> lengths, const cost::GroupCostModel& cost, int64_t degree,
                           int64_t extra_micro_batches) {
  const int64_t longest = lengths.empty() ? 1 : *std::max_element(lengths.begin(), lengths.end());
  const int64_t needed = cost.min_degree(longest);
  if (needed == 0 || needed > degree)
    throw_runtime_error("groups of {} devices cannot hold a sequence of {} tokens (capacity {} tokens)", degree,
                        longest, cost.token_capacity(degree));
  const FastSolver solver(degree);
  return plan_batch(lengths, cost, solver, nullptr, extra_micro_batches);
}

BatchPlan plan_best_homogeneous(std::span<const int64_t> lengths, const cost::GroupCostModel& cost, int64_t& degree,
                                int64_t extra_micro_batches, std::map<int64_t, double>* times) {
  const int64_t longest = lengths.empty() ? 1 : *std::max_element(lengths.begin(), lengths.end());
  const int64_t first = std::max<int64_t>(1, cost.min_degree(longest));
  BatchPlan best;
  best.time_s = std::numeric_limits<double>::infinity();
  for (int64_t d = first; d <= cost.max_degree(); d *= 2) {
    BatchPlan plan = plan_homogeneous(lengths, cost, d, extra_micro_batches);
    if (times) (*times)[d] = plan.time_s;
    if (plan.time_s < best.time_s) best = std::move(plan), degree = d;
  }
  return best;
}

const char* plan_kind_name(PlanChoice::Kind kind) { return kind == PlanChoice::Kind::batchada ? "batchada" : "flexsp"; }

PlanChoice choose_plan(std::span<const int64_t> lengths, const cost::GroupCostModel& cost,
                       const MicroBatchSolver* mixed, const MicroBatchSolver* refine, int64_t extra_micro_batches,
                       int64_t static_degree) {
  PlanChoice choice;
  BatchPlan plan;  // first: its errors name a sequence that fits nowhere
  if (mixed) plan = plan_batch(lengths, cost, *mixed, refine, extra_micro_batches);
  std::map<int64_t, double> times;
  BatchPlan single = plan_best_homogeneous(lengths, cost, choice.batchada_degree, extra_micro_batches, &times);
  choice.batchada_s = single.time_s;
  if (const auto it = times.find(static_degree); it != times.end()) {
    choice.static_degree = static_degree;
    choice.static_s = it->second;
  }
  if (mixed) choice.flexsp_s = plan.time_s;
  const bool single_faster = !mixed || single.time_s < plan.time_s;  // FlexSP's plan on ties
  choice.kind = single_faster ? PlanChoice::Kind::batchada : PlanChoice::Kind::flexsp;
  choice.plan = single_faster ? std::move(single) : std::move(plan);
  return choice;
}

BatchPlan plan_flexsp(std::span<const int64_t> lengths, const cost::GroupCostModel& cost,
                      const MicroBatchSolver& choose, const MicroBatchSolver* refine, int64_t extra_micro_batches,
                      bool* fell_back) {
  PlanChoice choice = choose_plan(lengths, cost, &choose, refine, extra_micro_batches);
  if (fell_back) *fell_back = choice.kind == PlanChoice::Kind::batchada;
  return std::move(choice.plan);
}

}  // namespace trident::flexsp
