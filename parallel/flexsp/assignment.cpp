#include "parallel/flexsp/assignment.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <queue>

namespace trident::flexsp {

double Slot::time_with(int64_t s, int sign) const {
  const double x = static_cast<double>(s);
  const double delta = cost.per_token2 * x * x + cost.per_token * x;
  if (sign > 0) return (count == 0 ? cost.overhead : time) + delta;
  return count == 1 ? 0.0 : time - delta;
}

double Assignment::makespan() const {
  double m = 0;
  for (const Slot& s : slots) m = std::max(m, s.time);
  return m;
}

Assignment empty_assignment(std::span<const int64_t> counts, const cost::GroupCostModel& cost) {
  Assignment a;
  for (size_t l = 0; l < counts.size(); ++l) {
    const int64_t d = int64_t{1} << l;
    for (int64_t i = 0; i < counts[l]; ++i) a.slots.push_back({d, cost.token_capacity(d), cost.degree_cost(d), {}, 0, 0, 0});
  }
  return a;
}

namespace {
void add(Slot& slot, int64_t k, int64_t s, bool record = true) {
  slot.time = slot.time_with(s, +1);
  slot.tokens += s;
  slot.count += 1;
  if (record) slot.sequences.push_back(k);
}
void remove(Slot& slot, int64_t k, int64_t s) {
  slot.time = slot.time_with(s, -1);
  slot.tokens -= s;
  slot.count -= 1;
  std::erase(slot.sequences, k);
}
}  // namespace

bool assign_longest_first(std::span<const int64_t> lengths, std::span<const int64_t> order, Assignment& a,
                          bool record) {
  // Slots of one degree differ only in what they hold, and the one with the least time finishes earliest with any
  // sequence; so keep one min-heap of slots by time per degree and look at each degree's top.
  using Entry = std::pair<double, size_t>;  // (time, slot)
  using Heap = std::priority_queue<Entry, std::vector<Entry>, std::greater<>>;
  std::vector<std::pair<int64_t, Heap>> by_degree;  // (degree, heap), one per degree present
  std::vector<size_t> heap_of(a.slots.size());
  for (size_t i = 0; i < a.slots.size(); ++i) {
    size_t h = 0;
    while (h < by_degree.size() && by_degree[h].first != a.slots[i].degree) ++h;
    if (h == by_degree.size()) by_degree.emplace_back(a.slots[i].degree, Heap());
    by_degree[h].second.push({a.slots[i].time, i});
    heap_of[i] = h;
  }
  for (int64_t k : order) {
    const int64_t s = lengths[k];
    size_t best = a.slots.size();
    double best_time = std::numeric_limits<double>::infinity();
    for (auto& [degree, heap] : by_degree) {
      size_t candidate = heap.top().second;
      if (a.slots[candidate].tokens + s > a.slots[candidate].capacity) {  // rare: the least loaded is full; scan
        candidate = a.slots.size();
        for (size_t i = 0; i < a.slots.size(); ++i) {
          const Slot& slot = a.slots[i];
          if (slot.degree == degree && slot.tokens + s <= slot.capacity &&
              (candidate == a.slots.size() || slot.time < a.slots[candidate].time))
            candidate = i;
        }
        if (candidate == a.slots.size()) continue;
      }
      const double t = a.slots[candidate].time_with(s, +1);
      if (t < best_time) best_time = t, best = candidate;
    }
    if (best == a.slots.size()) return false;
    add(a.slots[best], k, s, record);
    // re-key the slot: drop its old heap entry (lazily: entries whose time no longer matches are skipped)
    Heap& heap = by_degree[heap_of[best]].second;
    heap.push({a.slots[best].time, best});
    while (heap.top().first != a.slots[heap.top().second].time) heap.pop();
  }
  return true;
}

bool assign_to_target(std::span<const int64_t> lengths, std::span<const int64_t> order, Assignment& a, double target,
                      Prefer prefer, bool record) {
  auto preferred = [prefer](const Slot& x, const Slot& y) {
    return prefer == Prefer::small_groups ? x.degree < y.degree : x.degree > y.degree;
  };
  for (int64_t k : order) {
    const int64_t s = lengths[k];
    Slot* best = nullptr;
    for (Slot& slot : a.slots) {
      if (slot.tokens + s > slot.capacity || slot.time_with(s, +1) > target) continue;
      if (!best || preferred(slot, *best) || (slot.degree == best->degree && slot.time > best->time)) best = &slot;
    }
    if (!best) return false;
    add(*best, k, s, record);
  }
  return true;
}

bool repair_memory(std::span<const int64_t> lengths, Assignment& a) {
  auto over = [](const Slot& slot, int64_t tokens) { return std::max<int64_t>(0, tokens - slot.capacity); };
  // a sequence as long as the one before it in its slot has the same moves and swaps
  auto repeats = [&](const Slot& slot, size_t i) {
    return i > 0 && lengths[slot.sequences[i]] == lengths[slot.sequences[i - 1]];
  };
  for (size_t moves = 0; moves < 4 * lengths.size() + 16; ++moves) {
    // the best move (j < 0) or swap of sequence k from `from` to `to`: the largest drop in tokens over capacity,
    // taken at once when it clears a slot's whole excess
    int64_t best_drop = 0, best_k = -1, best_j = -1;
    Slot *best_from = nullptr, *best_to = nullptr;
    for (Slot& from : a.slots) {
      const int64_t excess = over(from, from.tokens);
      for (size_t i = 0; i < from.sequences.size() && best_drop < excess; ++i) {
        if (repeats(from, i)) continue;
        const int64_t k = from.sequences[i], s = lengths[k];
        for (Slot& to : a.slots) {
          if (&to == &from) continue;
          const int64_t before = excess + over(to, to.tokens);
          if (int64_t drop = before - over(from, from.tokens - s) - over(to, to.tokens + s); drop > best_drop)
            best_drop = drop, best_k = k, best_j = -1, best_from = &from, best_to = &to;
          for (size_t jj = 0; jj < to.sequences.size(); ++jj) {
            const int64_t j = to.sequences[jj], t = lengths[j];
            if (t >= s || repeats(to, jj)) continue;
            if (int64_t drop = before - over(from, from.tokens - s + t) - over(to, to.tokens - t + s); drop > best_drop)
              best_drop = drop, best_k = k, best_j = j, best_from = &from, best_to = &to;
          }
        }
      }
    }
    if (best_drop == 0) break;
    remove(*best_from, best_k, lengths[best_k]);
    add(*best_to, best_k, lengths[best_k]);
    if (best_j >= 0) {
      remove(*best_to, best_j, lengths[best_j]);
      add(*best_from, best_j, lengths[best_j]);
    }
  }
  return std::all_of(a.slots.begin(), a.slots.end(), [](const Slot& slot) { return slot.tokens <= slot.capacity; });
}

void improve(std::span<const int64_t> lengths, Assignment& a) {
  constexpr double kGain = 1e-12;  // a move must lower the pair's larger time by more than rounding
  for (int moves = 0; moves < 10000; ++moves) {
    Slot* slow = &*std::max_element(a.slots.begin(), a.slots.end(),
                                    [](const Slot& x, const Slot& y) { return x.time < y.time; });
    const double before = slow->time;
    bool moved = false;
    // 1. move one of its sequences elsewhere
    for (size_t i = 0; i < slow->sequences.size() && !moved; ++i) {
      const int64_t k = slow->sequences[i], s = lengths[k];
      const double rest = slow->time_with(s, -1);
      for (Slot& other : a.slots) {
        if (&other == slow || other.tokens + s > other.capacity) continue;
        if (std::max(rest, other.time_with(s, +1)) < before - kGain) {
          remove(*slow, k, s);
          add(other, k, s);
          moved = true;
          break;
        }
      }
    }
    // 2. swap one of its sequences with a shorter one of another slot
    for (size_t i = 0; i < slow->sequences.size() && !moved; ++i) {
      const int64_t k = slow->sequences[i], s = lengths[k];
      for (Slot& other : a.slots) {
        if (&other == slow || moved) continue;
        for (int64_t j : other.sequences) {
          const int64_t t = lengths[j];
          if (t >= s || other.tokens - t + s > other.capacity) continue;
          const double x = static_cast<double>(s), y = static_cast<double>(t);
          auto delta = [&](const Slot& slot) {
            return slot.cost.per_token2 * (y * y - x * x) + slot.cost.per_token * (y - x);
          };
          const double slow_after = slow->time + delta(*slow), other_after = other.time - delta(other);
          if (std::max(slow_after, other_after) < before - kGain) {
            remove(*slow, k, s);
            remove(other, j, t);
            add(*slow, j, t);
            add(other, k, s);
            moved = true;
            break;
          }
        }
      }
    }
    if (!moved) return;
  }
}

MicroBatchPlan to_plan(const Assignment& a, std::span<const int64_t> lengths, const cost::GroupCostModel& cost) {
  std::vector<std::pair<int64_t, std::vector<int64_t>>> groups;
  for (const Slot& slot : a.slots) groups.emplace_back(slot.degree, slot.sequences);
  return make_micro_batch(std::move(groups), lengths, cost);
}

}  // namespace trident::flexsp
