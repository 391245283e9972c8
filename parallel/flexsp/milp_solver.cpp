#include "parallel/flexsp/milp_solver.h"

#include <Cbc_C_Interface.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <numeric>

#include "core/common/error.h"
#include "parallel/flexsp/assignment.h"
#include "parallel/flexsp/bucketing.h"
#include "parallel/flexsp/fast_solver.h"

namespace trident::flexsp {

namespace {

struct CbcDeleter {
  void operator()(Cbc_Model* m) const { Cbc_deleteModel(m); }
};

struct VirtualGroup {
  int64_t degree;
  int m_col;
  std::vector<int> a_col;  // per bucket; -1 where the bucket does not fit
};

}  // namespace

std::optional<MicroBatchPlan> MilpSolver::solve(std::span<const int64_t> lengths, const cost::CostModel& cost) const {
  if (lengths.empty()) return MicroBatchPlan{};
  if (cost.min_degree(*std::max_element(lengths.begin(), lengths.end())) == 0) return std::nullopt;
  // May be empty when memory is nearly full (greedy bin packing can miss); CBC then starts from scratch.
  const std::optional<MicroBatchPlan> warm = FastSolver().solve(lengths, cost);

  // Buckets over the ascending order; bucket_of[k] for each sequence.
  std::vector<int64_t> ascending_index(lengths.size());
  std::iota(ascending_index.begin(), ascending_index.end(), 0);
  std::stable_sort(ascending_index.begin(), ascending_index.end(),
                   [&](int64_t a, int64_t b) { return lengths[a] < lengths[b]; });
  std::vector<int64_t> ascending;
  for (int64_t k : ascending_index) ascending.push_back(lengths[k]);
  const Buckets buckets = bucket_lengths(ascending, options_.buckets);
  const size_t Q = buckets.size();
  std::vector<size_t> bucket_of(lengths.size());
  for (size_t q = 0; q < Q; ++q)
    for (size_t i = buckets.begin[q]; i < buckets.begin[q + 1]; ++i) bucket_of[ascending_index[i]] = q;

  std::unique_ptr<Cbc_Model, CbcDeleter> model(Cbc_newModel());
  Cbc_setLogLevel(model.get(), 0);
  Cbc_setMaximumSeconds(model.get(), options_.time_limit_s);
  Cbc_addCol(model.get(), "C", 0, std::numeric_limits<double>::infinity(), 1, 0, 0, nullptr, nullptr);
  int columns = 1;
  std::vector<VirtualGroup> groups;
  for (int64_t d = cost.max_degree(); d >= 1; d /= 2) {
    for (int64_t j = 0; j < cost.devices() / d; ++j) {
      VirtualGroup g{d, columns++, std::vector<int>(Q, -1)};
      Cbc_addCol(model.get(), "", 0, 1, 0, 1, 0, nullptr, nullptr);
      for (size_t q = 0; q < Q; ++q) {
        if (buckets.length[q] > cost.token_capacity(d)) continue;
        g.a_col[q] = columns++;
        const double count = static_cast<double>(buckets.begin[q + 1] - buckets.begin[q]);
        Cbc_addCol(model.get(), "", 0, count, 0, 1, 0, nullptr, nullptr);
      }
      groups.push_back(std::move(g));
    }
  }
  std::vector<int> cols;
  std::vector<double> coefs;
  auto row = [&](char sense, double rhs) {
    Cbc_addRow(model.get(), "", static_cast<int>(cols.size()), cols.data(), coefs.data(), sense, rhs);
    cols.clear(), coefs.clear();
  };
  for (const VirtualGroup& g : groups) {
    const cost::DegreeCost k = cost.degree_cost(g.degree);
    cols = {0, g.m_col}, coefs = {-1.0, k.overhead};
    for (size_t q = 0; q < Q; ++q) {
      if (g.a_col[q] < 0) continue;
      const double s = static_cast<double>(buckets.length[q]);
      cols.push_back(g.a_col[q]), coefs.push_back(k.per_token2 * s * s + k.per_token * s);
    }
    row('L', 0);
    cols = {g.m_col}, coefs = {-static_cast<double>(cost.token_capacity(g.degree))};
    for (size_t q = 0; q < Q; ++q)
      if (g.a_col[q] >= 0) cols.push_back(g.a_col[q]), coefs.push_back(static_cast<double>(buckets.length[q]));
    row('L', 0);
  }
  for (const VirtualGroup& g : groups) cols.push_back(g.m_col), coefs.push_back(static_cast<double>(g.degree));
  row('L', static_cast<double>(cost.devices()));
  for (size_t q = 0; q < Q; ++q) {
    for (const VirtualGroup& g : groups)
      if (g.a_col[q] >= 0) cols.push_back(g.a_col[q]), coefs.push_back(1.0);
    row('E', static_cast<double>(buckets.begin[q + 1] - buckets.begin[q]));
  }
  for (size_t p = 0; p + 1 < groups.size(); ++p) {
    if (groups[p].degree != groups[p + 1].degree) continue;
    cols = {groups[p].m_col, groups[p + 1].m_col}, coefs = {1.0, -1.0};
    row('G', 0);
  }

  // Warm start: the fast plan's groups on the first virtual groups of their degree, counted per bucket.
  std::map<int, double> start;
  if (warm) {
    std::map<int64_t, size_t> next;  // degree -> next virtual group of that degree
    for (size_t p = 0; p < groups.size(); ++p)
      if (!next.count(groups[p].degree)) next[groups[p].degree] = p;
    double makespan = 0;
    for (const Group& g : warm->groups) {
      const VirtualGroup& v = groups[next[g.degree]++];
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
  }
  std::vector<int> start_cols;
  std::vector<double> start_values;
  for (auto [c, v] : start) start_cols.push_back(c), start_values.push_back(v);
  if (warm) Cbc_setMIPStartI(model.get(), static_cast<int>(start_cols.size()), start_cols.data(), start_values.data());

  Cbc_solve(model.get());
  const double* x = Cbc_getColSolution(model.get());
  if (!x || Cbc_numberSavedSolutions(model.get()) < 1) return warm;  // nothing better found in time (or no plan)

  // Counts back to real sequences: bucket q's sequences, in order, fill its groups' counts.
  std::vector<size_t> taken(Q, 0);
  Assignment a;
  for (const VirtualGroup& g : groups) {
    if (std::lround(x[g.m_col]) != 1) continue;
    Slot slot{g.degree, cost.token_capacity(g.degree), cost.degree_cost(g.degree), {}, 0, 0, 0};
    for (size_t q = 0; q < Q; ++q) {
      if (g.a_col[q] < 0) continue;
      for (long n = std::lround(x[g.a_col[q]]); n > 0; --n) {
        TRIDENT_CHECK(taken[q] < buckets.begin[q + 1] - buckets.begin[q], "bucket {} over-assigned", q);
        const int64_t k = ascending_index[buckets.begin[q] + taken[q]++];
        slot.time = slot.time_with(lengths[k], +1);
        slot.tokens += lengths[k];
        slot.count += 1;
        slot.sequences.push_back(k);
      }
    }
    a.slots.push_back(std::move(slot));
  }
  for (size_t q = 0; q < Q; ++q)
    TRIDENT_CHECK(taken[q] == buckets.begin[q + 1] - buckets.begin[q], "bucket {} under-assigned", q);
  // Idle devices become groups of one, so the local search may use them.
  int64_t used = 0;
  for (const Slot& s : a.slots) used += s.degree;
  for (; used < cost.devices(); ++used) a.slots.push_back({1, cost.token_capacity(1), cost.degree_cost(1), {}, 0, 0, 0});
  improve(lengths, a);
  MicroBatchPlan plan = to_plan(a, lengths, cost);
  plan.proven_optimal = Cbc_isProvenOptimal(model.get()) != 0;
  if (warm && warm->makespan_s < plan.makespan_s * (1 - 1e-12)) {  // bucket rounding made the MILP's plan worse
    MicroBatchPlan fallback = *warm;
    fallback.proven_optimal = false;
    return fallback;
  }
  return plan;
}

}  // namespace trident::flexsp
