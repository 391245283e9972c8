#include "parallel/flexsp/fast_solver.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "parallel/flexsp/assignment.h"

namespace trident::flexsp {

namespace {

using Counts = std::vector<int64_t>;  // counts[l]: groups of degree 2^l
using Groups = std::vector<std::pair<int64_t, std::vector<int64_t>>>;  // (degree, sequences), as make_micro_batch takes
constexpr size_t kStarts = 3;           // homogeneous layouts with a plan climbed from
constexpr size_t kPolished = 3;         // best layouts packed to their lowest targets
constexpr int kBisections = 10;         // geometric steps per target bisection
constexpr int64_t kExactNodes = 1 << 15;  // branch-and-bound budget: ~2 ms
constexpr double kNone = std::numeric_limits<double>::infinity();

// floor(devices / 2^level) groups of that degree, the rest of the devices in the largest groups that fit.
Counts homogeneous(int64_t level, int64_t levels, int64_t devices) {
  Counts c(levels, 0);
  c[level] = devices >> level;
  int64_t rest = devices - (c[level] << level);
  for (int64_t l = level - 1; l >= 0; --l)
    if (rest >= (int64_t{1} << l)) c[l] += 1, rest -= int64_t{1} << l;
  return c;
}

// The time of a group of degree d holding sequences whose lengths sum to sum1 and their squares to sum2.
double group_time(const cost::DegreeCost& d, double sum2, double sum1) {
  return d.overhead + d.per_token2 * sum2 + d.per_token * sum1;
}

// No placement beats the longest sequence alone on its fastest group that holds it.
double longest_alone(std::span<const int64_t> lengths, std::span<const int64_t> order,
                     const cost::GroupCostModel& cost) {
  const auto s = static_cast<double>(lengths[order[0]]);
  double fastest = kNone;
  for (int64_t d = 1; d <= cost.max_degree(); d *= 2)
    if (lengths[order[0]] <= cost.token_capacity(d))
      fastest = std::min(fastest, group_time(cost.degree_cost(d), s * s, s));
  return fastest;
}

// The time of the largest group holding its whole capacity as one sequence: no group can take longer, so a target
// above it leaves only memory to pack.
double memory_bound(const cost::GroupCostModel& cost, int64_t degree) {
  const auto c = static_cast<double>(cost.token_capacity(degree));
  return group_time(cost.degree_cost(degree), c * c, c);
}

// The lowest target in [lo, hi] that `meets` (bisected geometrically; targets span orders of magnitude), or kNone
// if it does not meet hi.
template <typename Meets>
double lowest_target(double lo, double hi, Meets meets) {
  if (!(hi < kNone) || !meets(hi)) return kNone;
  for (int step = 0; step < kBisections; ++step)
    if (const double target = std::sqrt(lo * hi); meets(target)) hi = target; else lo = target;
  return hi;
}

enum class Packing { greedy, small_first, large_first, repaired };

// Greedy longest-first by time alone (memory unlimited), then memory repair.
bool balance_then_repair(std::span<const int64_t> lengths, std::span<const int64_t> order, Assignment& a) {
  std::vector<int64_t> capacities;
  for (Slot& slot : a.slots) capacities.push_back(slot.capacity), slot.capacity = std::numeric_limits<int64_t>::max();
  assign_longest_first(lengths, order, a);
  for (size_t i = 0; i < a.slots.size(); ++i) a.slots[i].capacity = capacities[i];
  return repair_memory(lengths, a);
}

bool pack(std::span<const int64_t> lengths, std::span<const int64_t> order, Assignment& a, Packing packing,
          double target, bool record) {
  switch (packing) {
    case Packing::greedy: return assign_longest_first(lengths, order, a, record);
    case Packing::small_first: return assign_to_target(lengths, order, a, target, Prefer::small_groups, record);
    case Packing::large_first: return assign_to_target(lengths, order, a, target, Prefer::large_groups, record);
    case Packing::repaired: return balance_then_repair(lengths, order, a);
  }
  return false;
}

struct Score {
  double makespan = kNone;
  Packing packing = Packing::greedy;  // how the layout was packed to it
  double target = kNone;              // the target a target packing met
};

// Layouts scored once each: by greedy longest-first, or where that runs out of memory by the better of the target
// packings at their lowest targets (a loose target leaves memory alone to pack) and placing by time then repairing
// memory.
class LayoutSearch {
 public:
  LayoutSearch(std::span<const int64_t> lengths, std::span<const int64_t> order, const cost::GroupCostModel& cost)
      : lengths_(lengths), order_(order), cost_(cost),
        levels_(std::countr_zero(static_cast<uint64_t>(cost.max_degree())) + 1) {}

  int64_t levels() const { return levels_; }

  const Score& score(const Counts& counts) {
    auto [it, fresh] = scores_.try_emplace(counts);  // climbs from different starts meet the same layouts
    if (!fresh) return it->second;
    Score& best = it->second;
    Assignment a = empty_assignment(counts, cost_);
    if (assign_longest_first(lengths_, order_, a, /*record=*/false))
      return best = {a.makespan(), Packing::greedy, kNone};
    int64_t largest = 0;
    for (int64_t l = 0; l < levels_; ++l)
      if (counts[l] > 0) largest = int64_t{1} << l;
    for (Packing packing : {Packing::small_first, Packing::large_first})
      if (Score s = target_packing(counts, packing, lower_bound(counts), memory_bound(cost_, largest));
          s.makespan < best.makespan)
        best = s;
    Assignment r = empty_assignment(counts, cost_);
    if (balance_then_repair(lengths_, order_, r)) {
      improve(lengths_, r);  // repair leaves times uneven: scored as is, good repairs ranked low
      if (r.makespan() < best.makespan) best = {r.makespan(), Packing::repaired, kNone};
    }
    return best;
  }

  // Hill climbing: the best of "split one group into two of half the degree" and "merge two into one of double
  // the degree" while it lowers the score (every layout met is kept for ranked()).
  void climb(Counts counts) {
    double current = score(counts).makespan;
    for (;;) {
      double best = kNone;
      Counts best_counts;
      auto consider = [&](Counts c) {
        if (double t = score(c).makespan; t < best) best = t, best_counts = std::move(c);
      };
      for (int64_t l = 0; l < levels_; ++l) {
        if (l > 0 && counts[l] >= 1) {
          Counts c = counts;
          c[l] -= 1, c[l - 1] += 2;
          consider(std::move(c));
        }
        if (l + 1 < levels_ && counts[l] >= 2) {
          Counts c = counts;
          c[l] -= 2, c[l + 1] += 1;
          consider(std::move(c));
        }
      }
      if (!(best < current)) return;
      current = best;
      counts = std::move(best_counts);
    }
  }

  // Every layout scored so far, best first.
  std::vector<std::pair<Score, Counts>> ranked() const {
    std::vector<std::pair<Score, Counts>> out;
    for (const auto& [counts, s] : scores_) out.emplace_back(s, counts);
    std::stable_sort(out.begin(), out.end(),
                     [](const auto& a, const auto& b) { return a.first.makespan < b.first.makespan; });
    return out;
  }

  // The target packing at the lowest target in [lo, hi] it meets on `counts`; no makespan if it does not meet hi.
  Score target_packing(const Counts& counts, Packing packing, double lo, double hi) const {
    const double target = lowest_target(lo, hi, [&](double t) {
      Assignment a = empty_assignment(counts, cost_);
      return pack(lengths_, order_, a, packing, t, /*record=*/false);
    });
    if (!(target < kNone)) return {};
    Assignment a = empty_assignment(counts, cost_);
    pack(lengths_, order_, a, packing, target, /*record=*/false);
    return {a.makespan(), packing, target};
  }

  // Every sequence takes at least its time alone on the fastest of `counts`'s degrees that holds it.
  double lower_bound(const Counts& counts) const {
    double bound = 0;
    for (int64_t k : order_) {
      double fastest = kNone;
      for (int64_t l = 0; l < levels_; ++l) {
        const int64_t d = int64_t{1} << l;
        if (counts[l] > 0 && lengths_[k] <= cost_.token_capacity(d))
          fastest = std::min(fastest, cost_.group_overhead_s(d) + cost_.sequence_s(lengths_[k], d));
      }
      bound = std::max(bound, fastest);
    }
    return bound;
  }

 private:
  std::span<const int64_t> lengths_, order_;
  const cost::GroupCostModel& cost_;
  int64_t levels_;
  std::map<Counts, Score> scores_;
};

// Groups formed while packing, no layout given: each sequence (longest first) joins the group, or opens the new one,
// that needs the fewest extra devices to hold it within `target` (a group's degree: the smallest power of two that
// holds it within memory and the target); among equals the one adding the least device time (degree x time), then
// the one that finishes latest. Spare devices become empty groups. None when the cluster has too few devices.
// It finds layouts the climb stalls before, e.g. each sequence alone on the smallest group that holds it.
std::optional<Assignment> form_groups(std::span<const int64_t> lengths, std::span<const int64_t> order,
                                      const cost::GroupCostModel& cost, double target) {
  struct Degree {
    double degree;
    int64_t capacity;
    cost::DegreeCost cost;
  };
  std::vector<Degree> degrees;
  for (int64_t d = 1; d <= cost.max_degree(); d *= 2)
    degrees.push_back({static_cast<double>(d), cost.token_capacity(d), cost.degree_cost(d)});
  struct Packed {
    int64_t tokens = 0;
    double sum2 = 0, sum1 = 0, time = 0;
    size_t level = 0;
    std::vector<int64_t> sequences;
  };
  std::vector<Packed> groups;
  const Packed none;  // what opening a group joins
  double used = 0;
  for (int64_t k : order) {
    const auto s = static_cast<double>(lengths[k]);
    size_t best = 0, best_level = degrees.size();
    double best_extra = kNone, best_area = kNone, best_time = 0;
    for (size_t g = 0; g <= groups.size(); ++g) {
      const bool open = g == groups.size();
      const Packed& joined = open ? none : groups[g];
      size_t l = joined.level;  // degrees only grow
      double t = kNone;
      for (; l < degrees.size(); ++l) {
        t = group_time(degrees[l].cost, joined.sum2 + s * s, joined.sum1 + s);
        if (joined.tokens + lengths[k] <= degrees[l].capacity && t <= target) break;
      }
      if (l == degrees.size()) continue;
      const Degree& d = degrees[l];
      const double extra = open ? d.degree : d.degree - degrees[joined.level].degree;
      // the same for every group of a degree it joins without growing it: best fit (latest finish) decides there
      const double area = !open && l == joined.level ? d.degree * (d.cost.per_token2 * s * s + d.cost.per_token * s)
                                                     : d.degree * t - degrees[joined.level].degree * joined.time;
      if (extra < best_extra || (extra == best_extra && (area < best_area || (area == best_area && t > best_time))))
        best = g, best_level = l, best_extra = extra, best_area = area, best_time = t;
    }
    if (best_level == degrees.size()) return std::nullopt;
    used += best_extra;
    if (used > static_cast<double>(cost.devices())) return std::nullopt;
    if (best == groups.size()) groups.emplace_back();
    Packed& g = groups[best];
    g.tokens += lengths[k], g.sum2 += s * s, g.sum1 += s, g.time = best_time, g.level = best_level;
    g.sequences.push_back(k);
  }
  Counts counts(degrees.size(), 0);
  for (const Packed& g : groups) counts[g.level] += 1;
  int64_t spare = cost.devices() - static_cast<int64_t>(used);
  for (size_t l = degrees.size(); l-- > 0;)
    for (const auto d = static_cast<int64_t>(degrees[l].degree); spare >= d; spare -= d) counts[l] += 1;
  Assignment a = empty_assignment(counts, cost);
  for (const Packed& g : groups) {
    const auto d = static_cast<int64_t>(degrees[g.level].degree);
    auto slot =
        std::find_if(a.slots.begin(), a.slots.end(), [&](const Slot& x) { return x.degree == d && x.count == 0; });
    for (int64_t k : g.sequences) {
      slot->time = slot->time_with(lengths[k], +1);
      slot->tokens += lengths[k], slot->count += 1, slot->sequences.push_back(k);
    }
  }
  return a;
}

// Branch and bound over every placement, for few sequences: longest first, each sequence joins a group opened so far
// or opens one; a group's degree is the smallest power of two that holds it and stays under the best makespan found.
// A branch ends when the groups' degrees, the devices the remaining tokens need beyond the groups' free memory, or
// the device time (degree x time) of the groups and the remaining sequences exceed the cluster.
class ExactSearch {
 public:
  ExactSearch(std::span<const int64_t> lengths, std::span<const int64_t> order, const cost::GroupCostModel& cost,
              double incumbent)
      : lengths_(lengths), order_(order), devices_(cost.devices()), per_device_(cost.token_capacity(1)),
        best_(incumbent), blocks_(order.size()), block_of_(order.size()), rest_tokens_(order.size() + 1, 0),
        rest_area_(order.size() + 1, 0.0) {
    for (int64_t d = 1; d <= cost.max_degree(); d *= 2)
      degrees_.push_back({d, cost.token_capacity(d), cost.degree_cost(d)});
    for (size_t pos = order.size(); pos-- > 0;) {
      const int64_t s = lengths[order[pos]];
      double area = kNone;
      for (const Degree& d : degrees_)
        if (s <= d.capacity) area = std::min(area, static_cast<double>(d.degree) * cost.sequence_s(s, d.degree));
      rest_tokens_[pos] = rest_tokens_[pos + 1] + s;
      rest_area_[pos] = rest_area_[pos + 1] + area;
    }
  }

  // The best placement under the incumbent, within the node budget; empty when none beats it.
  Groups run() {
    search(0, 0, State{});
    return best_groups_;
  }

 private:
  struct Degree {
    int64_t degree, capacity;
    cost::DegreeCost cost;
  };
  struct Block {
    int64_t tokens = 0;
    double sum2 = 0, sum1 = 0;  // of s^2 and s over its sequences
    int64_t degree = 0;         // the smallest that can beat the best makespan (as of when it last grew)
    double area = 0;            // the least device time it can take at that degree or above
    double time(const Degree& d) const { return group_time(d.cost, sum2, sum1); }
  };
  struct State {  // over the open blocks
    int64_t devices = 0, room = 0;  // devices at their degrees; tokens those still hold
    double area = 0;
  };

  double bound() const { return best_ * (1 - 1e-12); }  // only a clear improvement counts

  // The block's smallest degree and least area under the bound; degree 0 when none meets it.
  void fit(Block& b) const {
    b.degree = 0, b.area = kNone;
    for (const Degree& d : degrees_)
      if (b.tokens <= d.capacity && b.time(d) < bound()) {
        if (b.degree == 0) b.degree = d.degree;
        b.area = std::min(b.area, static_cast<double>(d.degree) * b.time(d));
      }
  }

  // Whatever group a device ends up in, it holds per_device_ tokens and runs for at most the makespan.
  bool promising(size_t pos, const State& st) const {
    const int64_t overflow = std::max<int64_t>(0, rest_tokens_[pos] - st.room);
    return st.devices + (overflow + per_device_ - 1) / per_device_ <= devices_ &&
           st.area + rest_area_[pos] <= static_cast<double>(devices_) * best_;
  }

  void search(size_t pos, size_t open, const State& st) {
    if (++nodes_ > kExactNodes) return;
    if (pos == order_.size()) return leaf(open);
    const int64_t k = order_[pos];
    const auto s = static_cast<double>(lengths_[k]);
    // equal lengths are interchangeable: their groups in opening order (no permutations of the same placement)
    const size_t first = pos > 0 && lengths_[k] == lengths_[order_[pos - 1]] ? block_of_[pos - 1] : 0;
    for (size_t b = first; b <= open; ++b) {
      Block& block = blocks_[b];
      const Block before = b < open ? block : Block{};
      block.tokens = before.tokens + lengths_[k];
      block.sum2 = before.sum2 + s * s;
      block.sum1 = before.sum1 + s;
      fit(block);
      if (block.degree > 0) {
        State next = st;
        next.devices += block.degree - before.degree;
        next.room += block.degree * per_device_ - block.tokens - (before.degree * per_device_ - before.tokens);
        next.area += block.area - before.area;
        if (promising(pos + 1, next)) {
          block_of_[pos] = b;
          search(pos + 1, b < open ? open : open + 1, next);
        }
      }
      block = before;
    }
  }

  // The least makespan of this partition: the smallest of its groups' times at which every group gets a degree
  // meeting it within the cluster's devices.
  void leaf(size_t open) {
    times_.clear();
    for (size_t b = 0; b < open; ++b)
      for (const Degree& d : degrees_)
        if (blocks_[b].tokens <= d.capacity && blocks_[b].time(d) < bound()) times_.push_back(blocks_[b].time(d));
    std::sort(times_.begin(), times_.end());
    auto degree_for = [&](const Block& b, double makespan) {
      for (const Degree& d : degrees_)
        if (b.tokens <= d.capacity && b.time(d) <= makespan) return d.degree;
      return int64_t{0};
    };
    auto fits = [&](double makespan) {
      int64_t used = 0;
      for (size_t b = 0; b < open; ++b) {
        const int64_t degree = degree_for(blocks_[b], makespan);
        if (degree == 0) return false;
        used += degree;
      }
      return used <= devices_;
    };
    const auto it = std::partition_point(times_.begin(), times_.end(), [&](double t) { return !fits(t); });
    if (it == times_.end()) return;
    best_ = *it;
    best_groups_.assign(open, {});
    for (size_t b = 0; b < open; ++b) best_groups_[b].first = degree_for(blocks_[b], best_);
    for (size_t pos = 0; pos < order_.size(); ++pos) best_groups_[block_of_[pos]].second.push_back(order_[pos]);
  }

  std::span<const int64_t> lengths_, order_;
  int64_t devices_, per_device_;
  double best_;
  std::vector<Degree> degrees_;
  std::vector<Block> blocks_;
  std::vector<size_t> block_of_;      // block of the sequence at each position of order_
  std::vector<int64_t> rest_tokens_;  // from each position of order_ on
  std::vector<double> rest_area_;     // least device time from each position on
  std::vector<double> times_;         // a leaf's candidate makespans
  Groups best_groups_;
  int64_t nodes_ = 0;
};

}  // namespace

std::optional<MicroBatchPlan> FastSolver::solve(std::span<const int64_t> lengths,
                                                const cost::GroupCostModel& cost) const {
  if (lengths.empty()) return MicroBatchPlan{};
  std::vector<int64_t> order(lengths.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return lengths[a] > lengths[b]; });
  const int64_t longest_degree = cost.min_degree(lengths[order[0]]);
  // no plan holds a sequence longer than the largest group does, or more tokens than all devices do
  if (longest_degree == 0 ||
      std::accumulate(lengths.begin(), lengths.end(), int64_t{0}) > cost.token_capacity(1) * cost.devices())
    return std::nullopt;
  LayoutSearch search(lengths, order, cost);

  if (only_degree_ > 0) {
    if (only_degree_ < longest_degree || only_degree_ > cost.max_degree()) return std::nullopt;
    search.score(homogeneous(std::countr_zero(static_cast<uint64_t>(only_degree_)), search.levels(), cost.devices()));
  } else {
    // Climb from the best few homogeneous layouts whose degree holds the longest sequence (the best one alone
    // sometimes climbs to a poorer local optimum than a runner-up), and from those with no plan: where memory is
    // tight a neighbour often has one.
    std::vector<std::pair<double, Counts>> starts;
    for (int64_t level = std::countr_zero(static_cast<uint64_t>(longest_degree)); level < search.levels(); ++level) {
      Counts counts = homogeneous(level, search.levels(), cost.devices());
      starts.emplace_back(search.score(counts).makespan, counts);
    }
    std::stable_sort(starts.begin(), starts.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t i = 0; i < starts.size(); ++i)
      if (i < kStarts || !(starts[i].first < kNone)) search.climb(starts[i].second);
  }

  // The best layout as scored, and the best target packing of the best few layouts seen, each improved by the local
  // search: greedy "earliest finish" is myopic (it puts a long sequence on an empty big group that the makespan did
  // not need), and the two target packings differ in which groups' memory they use up first.
  std::optional<Assignment> plan;
  auto keep_better = [&](Assignment a) {
    improve(lengths, a);
    if (!plan || a.makespan() < plan->makespan()) plan = std::move(a);
  };
  auto packed = [&](const Counts& counts, const Score& s) {
    Assignment a = empty_assignment(counts, cost);
    pack(lengths, order, a, s.packing, s.target, /*record=*/true);
    return a;
  };
  const auto ranked = search.ranked();
  if (!ranked.empty() && ranked[0].first.makespan < kNone) keep_better(packed(ranked[0].second, ranked[0].first));
  Score best_target;
  Counts target_counts;
  for (size_t i = 0; i < std::min(ranked.size(), kPolished) && ranked[i].first.makespan < kNone; ++i) {
    const auto& [scored, counts] = ranked[i];
    const double lo = std::max(search.lower_bound(counts), scored.makespan / 2);
    // the two preferences differ only where the layout mixes degrees
    const bool mixed = std::count_if(counts.begin(), counts.end(), [](int64_t c) { return c > 0; }) > 1;
    for (Packing packing : {Packing::small_first, Packing::large_first})
      if (packing == Packing::small_first || mixed)
        if (Score s = search.target_packing(counts, packing, lo, scored.makespan); s.makespan < best_target.makespan)
          best_target = s, target_counts = counts;
  }
  if (best_target.makespan < kNone) keep_better(packed(target_counts, best_target));
  if (only_degree_ == 0) {
    const double lo = longest_alone(lengths, order, cost);
    const double target = lowest_target(lo, memory_bound(cost, cost.max_degree()), [&](double t) {
      return form_groups(lengths, order, cost, t).has_value();
    });
    if (target < kNone) keep_better(*form_groups(lengths, order, cost, target));
  }

  std::optional<MicroBatchPlan> result;
  if (plan) result = to_plan(*plan, lengths, cost);
  // Few sequences: search every placement for a better one (the heuristic's makespan prunes it), unless the
  // heuristic already matches the bound of the longest sequence alone.
  if (only_degree_ == 0 && lengths.size() <= exact_up_to_ &&
      !(result && result->makespan_s <= longest_alone(lengths, order, cost) * (1 + 1e-12))) {
    Groups groups = ExactSearch(lengths, order, cost, result ? result->makespan_s : kNone).run();
    if (!groups.empty()) {
      MicroBatchPlan exact = make_micro_batch(std::move(groups), lengths, cost);
      if (!result || exact.makespan_s < result->makespan_s) result = std::move(exact);
    }
  }
  return result;
}

}  // namespace trident::flexsp
