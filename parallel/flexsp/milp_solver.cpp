#include "parallel/flexsp/milp_solver.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <numeric>

#include "kernels/common/error.h"
#include "parallel/flexsp/assignment.h"
#include "parallel/flexsp/bucketing.h"
#include "parallel/flexsp/fast_solver.h"
#include "parallel/flexsp/milp_model.h"

namespace trident::flexsp {

namespace {

struct VirtualGroup {
  int64_t degree;
  int m_col;
  std::vector<int> a_col;  // per bucket; -1 where the bucket does not fit
};

// The bucketed model of one micro-batch, and what is needed to read its solution back.
struct BucketedMilp {
  MilpModel model;
  Buckets buckets;
  std::vector<int64_t> ascending_index;  // sequence indices by ascending length (buckets cut this order)
  std::vector<VirtualGroup> groups;
};

BucketedMilp build(std::span<const int64_t> lengths, const cost::GroupCostModel& cost, int64_t max_buckets,
                   const std::optional<MicroBatchPlan>& warm) {
  BucketedMilp b;
  b.ascending_index.resize(lengths.size());
  std::iota(b.ascending_index.begin(), b.ascending_index.end(), 0);
  std::stable_sort(b.ascending_index.begin(), b.ascending_index.end(),
                   [&](int64_t x, int64_t y) { return lengths[x] < lengths[y]; });
  std::vector<int64_t> ascending;
  for (int64_t k : b.ascending_index) ascending.push_back(lengths[k]);
  b.buckets = bucket_lengths(ascending, max_buckets);
  const Buckets& buckets = b.buckets;
  const size_t Q = buckets.size();
  auto count = [&](size_t q) { return static_cast<double>(buckets.begin[q + 1] - buckets.begin[q]); };
  auto shortest = [&](size_t q) { return ascending[buckets.begin[q]]; };

  MilpModel& m = b.model;
  m.columns.push_back({0, std::numeric_limits<double>::infinity(), 1, false});  // C
  for (int64_t d = cost.max_degree(); d >= 1; d /= 2) {
    for (int64_t j = 0; j < cost.devices() / d; ++j) {
      VirtualGroup g{d, static_cast<int>(m.columns.size()), std::vector<int>(Q, -1)};
      m.columns.push_back({0, 1, 0, true});
      for (size_t q = 0; q < Q; ++q) {
        if (buckets.length[q] > cost.token_capacity(d)) continue;
        g.a_col[q] = static_cast<int>(m.columns.size());
        m.columns.push_back({0, count(q), 0, true});
      }
      b.groups.push_back(std::move(g));
    }
  }
  for (const VirtualGroup& g : b.groups) {
    const cost::DegreeCost k = cost.degree_cost(g.degree);
    MilpModel::Row time{{0, g.m_col}, {-1.0, k.overhead}, 'L', 0};
    MilpModel::Row memory{{g.m_col}, {-static_cast<double>(cost.token_capacity(g.degree))}, 'L', 0};
    for (size_t q = 0; q < Q; ++q) {
      if (g.a_col[q] < 0) continue;
      const double s = static_cast<double>(buckets.length[q]);
      time.columns.push_back(g.a_col[q]), time.coefficients.push_back(k.per_token2 * s * s + k.per_token * s);
      memory.columns.push_back(g.a_col[q]), memory.coefficients.push_back(static_cast<double>(shortest(q)));
    }
    m.rows.push_back(std::move(time));
    m.rows.push_back(std::move(memory));
  }
  MilpModel::Row devices{{}, {}, 'L', static_cast<double>(cost.devices())};
  for (const VirtualGroup& g : b.groups)
    devices.columns.push_back(g.m_col), devices.coefficients.push_back(static_cast<double>(g.degree));
  m.rows.push_back(std::move(devices));
  for (size_t q = 0; q < Q; ++q) {
    MilpModel::Row once{{}, {}, 'E', count(q)};
    for (const VirtualGroup& g : b.groups)
      if (g.a_col[q] >= 0) once.columns.push_back(g.a_col[q]), once.coefficients.push_back(1.0);
    m.rows.push_back(std::move(once));
  }
  for (size_t p = 0; p + 1 < b.groups.size(); ++p)
    if (b.groups[p].degree == b.groups[p + 1].degree)
      m.rows.push_back({{b.groups[p].m_col, b.groups[p + 1].m_col}, {1.0, -1.0}, 'G', 0});

  // Warm start: the fast plan's groups on the first virtual groups of their degree, counted per bucket.
  if (warm) {
    std::vector<size_t> bucket_of(lengths.size());
    for (size_t q = 0; q < Q; ++q)
      for (size_t i = buckets.begin[q]; i < buckets.begin[q + 1]; ++i) bucket_of[b.ascending_index[i]] = q;
    std::map<int64_t, size_t> next;  // degree -> next virtual group of that degree
    for (size_t p = 0; p < b.groups.size(); ++p)
      if (!next.count(b.groups[p].degree)) next[b.groups[p].degree] = p;
    std::map<int, double> start;
    double makespan = 0;
    for (const GroupPlan& g : warm->groups) {
      const VirtualGroup& v = b.groups[next[g.degree]++];
      const cost::DegreeCost k = cost.degree_cost(g.degree);
      double time = k.overhead;
      start[v.m_col] = 1;
      for (int64_t seq : g.sequences) {
        const size_t q = bucket_of[seq];
        const double s = static_cast<double>(buckets.length[q]);
        start[v.a_col[q]] += 1;
        time += k.per_token2 * s * s + k.per_token * s;
      }
      makespan = std::max(makespan, time);
    }
    start[0] = makespan;
    m.start.assign(start.begin(), start.end());
  }
  return b;
}

}  // namespace

MilpModel milp_model(std::span<const int64_t> lengths, const cost::GroupCostModel& cost, const MilpOptions& options) {
  return build(lengths, cost, options.buckets, FastSolver().solve(lengths, cost)).model;
}

std::optional<MicroBatchPlan> MilpSolver::solve(std::span<const int64_t> lengths,
                                                const cost::GroupCostModel& cost) const {
  if (lengths.empty()) return MicroBatchPlan{};
  if (cost.min_degree(*std::max_element(lengths.begin(), lengths.end())) == 0) return std::nullopt;
  // May be empty when memory is nearly full (greedy bin packing can miss); CBC then starts from scratch.
  const std::optional<MicroBatchPlan> warm = FastSolver().solve(lengths, cost);
  const BucketedMilp milp = build(lengths, cost, options_.buckets, warm);
  const MilpResult result = solve_with_cbc(milp.model, options_.time_limit_s);
  if (result.x.empty()) return warm;  // nothing found in time (or no plan)
  const std::vector<double>& x = result.x;
  const Buckets& buckets = milp.buckets;
  const size_t Q = buckets.size();
  const std::vector<VirtualGroup>& groups = milp.groups;
  const std::vector<int64_t>& ascending_index = milp.ascending_index;

  // Counts back to real sequences. Memory rows counted each bucket at its shortest length (so the fast plan is
  // always a valid start), so the members are dealt out with care: bucket by bucket, longest first, each to the
  // group with the most memory left among those still owed sequences of that bucket. A group over its real
  // capacity after that falls back to the warm start.
  std::vector<size_t> taken(Q, 0);
  Assignment a;
  std::vector<std::vector<long>> owed;  // per used group, per bucket
  for (const VirtualGroup& g : groups) {
    if (std::lround(x[g.m_col]) != 1) continue;
    a.slots.push_back({g.degree, cost.token_capacity(g.degree), cost.degree_cost(g.degree), {}, 0, 0, 0});
    owed.emplace_back(Q, 0);
    for (size_t q = 0; q < Q; ++q)
      if (g.a_col[q] >= 0) owed.back()[q] = std::lround(x[g.a_col[q]]);
  }
  for (size_t q = Q; q-- > 0;) {
    for (size_t i = buckets.begin[q + 1]; i-- > buckets.begin[q];) {
      const int64_t k = ascending_index[i];
      size_t best = a.slots.size();
      for (size_t p = 0; p < a.slots.size(); ++p)
        if (owed[p][q] > 0 && (best == a.slots.size() || a.slots[p].capacity - a.slots[p].tokens >
                                                              a.slots[best].capacity - a.slots[best].tokens))
          best = p;
      TRIDENT_CHECK(best < a.slots.size(), "bucket {} over-assigned", q);
      --owed[best][q];
      ++taken[q];
      Slot& slot = a.slots[best];
      slot.time = slot.time_with(lengths[k], +1);
      slot.tokens += lengths[k];
      slot.count += 1;
      slot.sequences.push_back(k);
    }
  }
  for (const Slot& slot : a.slots)
    if (slot.tokens > slot.capacity) return warm;
  for (size_t q = 0; q < Q; ++q)
    TRIDENT_CHECK(taken[q] == buckets.begin[q + 1] - buckets.begin[q], "bucket {} under-assigned", q);
  // Idle devices become groups of one, so the local search may use them.
  int64_t used = 0;
  for (const Slot& s : a.slots) used += s.degree;
  for (; used < cost.devices(); ++used) a.slots.push_back({1, cost.token_capacity(1), cost.degree_cost(1), {}, 0, 0, 0});
  improve(lengths, a);
  MicroBatchPlan plan = to_plan(a, lengths, cost);
  plan.proven_optimal = result.proven_optimal;
  if (warm && warm->makespan_s < plan.makespan_s * (1 - 1e-12)) {  // bucket rounding made the MILP's plan worse
    MicroBatchPlan fallback = *warm;
    fallback.proven_optimal = false;
    return fallback;
  }
  return plan;
}

}  // namespace trident::flexsp
