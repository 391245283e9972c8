#include "parallel/flexsp/plan.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "kernels/common/error.h"

namespace trident::flexsp {

MicroBatchPlan make_micro_batch(std::vector<std::pair<int64_t, std::vector<int64_t>>> groups,
                                std::span<const int64_t> lengths, const cost::GroupCostModel& cost) {
  std::erase_if(groups, [](const auto& g) { return g.second.empty(); });
  std::stable_sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  MicroBatchPlan plan;
  int64_t offset = 0;
  for (auto& [degree, sequences] : groups) {
    GroupPlan g{degree, offset, std::move(sequences), 0, 0};
    std::sort(g.sequences.begin(), g.sequences.end());
    std::vector<int64_t> group_lengths;
    for (int64_t k : g.sequences) group_lengths.push_back(lengths[k]);
    for (int64_t s : group_lengths) g.tokens += s;
    g.time_s = cost.group_time_s(group_lengths, degree);
    plan.makespan_s = std::max(plan.makespan_s, g.time_s);
    offset += degree;
    plan.groups.push_back(std::move(g));
  }
  return plan;
}

void check_micro_batch(const MicroBatchPlan& plan, std::span<const int64_t> lengths, const cost::GroupCostModel& cost,
                       std::span<const int64_t> expected) {
  std::map<int64_t, int> placed;
  int64_t devices = 0;
  for (const GroupPlan& g : plan.groups) {
    if (g.degree < 1 || (g.degree & (g.degree - 1)) != 0)
      throw_runtime_error("plan: a group of {} devices is not a power of two", g.degree);
    if (g.first_device % g.degree != 0)
      throw_runtime_error("plan: a group of {} devices starts at device {}, not a multiple of {}", g.degree,
                          g.first_device, g.degree);
    if (g.first_device != devices)
      throw_runtime_error("plan: groups overlap or leave gaps at device {}", g.first_device);
    devices += g.degree;
    int64_t tokens = 0;
    for (int64_t k : g.sequences) {
      if (k < 0 || k >= static_cast<int64_t>(lengths.size()))
        throw_runtime_error("plan: sequence index {} out of range", k);
      tokens += lengths[k];
      ++placed[k];
    }
    if (tokens > cost.token_capacity(g.degree))
      throw_runtime_error("plan: a group of {} devices holds {} tokens, over its capacity of {}", g.degree, tokens,
                          cost.token_capacity(g.degree));
  }
  if (devices > cost.devices())
    throw_runtime_error("plan: uses {} devices, the cluster has {}", devices, cost.devices());
  std::vector<int64_t> all;
  if (expected.empty())
    for (int64_t k = 0; k < static_cast<int64_t>(lengths.size()); ++k) all.push_back(k);
  else
    all.assign(expected.begin(), expected.end());
  for (int64_t k : all)
    if (placed[k] != 1) throw_runtime_error("plan: sequence {} is placed {} times", k, placed[k]);
  if (placed.size() != all.size()) throw_runtime_error("plan: places sequences it was not given");
}

std::string describe_groups(const MicroBatchPlan& plan) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < plan.groups.size();) {
    size_t j = i;
    while (j < plan.groups.size() && plan.groups[j].degree == plan.groups[i].degree) ++j;
    parts.push_back(j - i == 1 ? fmt::format("{}", plan.groups[i].degree)
                               : fmt::format("{}x{}", plan.groups[i].degree, j - i));
    i = j;
  }
  return fmt::format("<{}>", fmt::join(parts, ", "));
}

}  // namespace trident::flexsp
