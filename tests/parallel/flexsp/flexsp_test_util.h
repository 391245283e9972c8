#pragma once
// A small cluster for planner tests and the exhaustive reference the solvers are checked against.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "parallel/cost/group_cost_model.h"

namespace trident::flexsp::test {

// 128 tokens per device; all-to-alls slow enough (0.1 GB/s in a node, 0.01 GB/s across) to compete with compute,
// so degree choices matter.
inline cost::GroupCostModel small_cluster(int64_t nodes, int64_t devices_per_node) {
  const std::string yaml = fmt::format(R"(
cluster: {{name: test, nodes: {}, devices_per_node: {}, device_memory_gb: 1}}
network:
  intra_node: {{bandwidth_gb_per_s: 0.1, latency_us: 50}}
  inter_node: {{bandwidth_gb_per_s: 0.01, latency_us: 200}}
compute: {{alpha1_s_per_token2: 1.0e-6, alpha2_s_per_token: 1.0e-3, beta1_s: 0.01}}
memory: {{model_states_gb: 0, bytes_per_token: 8388608}}
model: {{n_layer: 4, n_embd: 1024, bytes_per_value: 2}}
)", nodes, devices_per_node);
  return cost::GroupCostModel::from_profile(cost::parse_profile(yaml, "test.yaml"));
}

// The least makespan over every placement: each set partition of the sequences into groups, each group any
// power-of-two degree that holds it, degrees summing to at most the cluster's devices.
inline double exhaustive_makespan(std::span<const int64_t> lengths, const cost::GroupCostModel& cost) {
  const size_t n = lengths.size();
  double best = std::numeric_limits<double>::infinity();
  std::vector<int> block(n, 0);  // restricted growth string: block[i] <= max(block[0..i-1]) + 1
  std::function<void(size_t, int)> partitions = [&](size_t i, int blocks) {
    if (i == n) {
      std::vector<std::vector<int64_t>> members(blocks);
      for (size_t k = 0; k < n; ++k) members[block[k]].push_back(lengths[k]);
      // choose a degree per block, depth first
      std::function<void(int, int64_t, double)> degrees = [&](int b, int64_t used, double makespan) {
        if (makespan >= best) return;
        if (b == blocks) {
          best = makespan;
          return;
        }
        int64_t tokens = 0;
        for (int64_t s : members[b]) tokens += s;
        for (int64_t d = 1; d <= cost.max_degree() && used + d <= cost.devices(); d *= 2) {
          if (tokens > cost.token_capacity(d)) continue;
          degrees(b + 1, used + d, std::max(makespan, cost.group_time_s(members[b], d)));
        }
      };
      degrees(0, 0, 0.0);
      return;
    }
    for (int b = 0; b <= blocks; ++b) {
      block[i] = b;
      partitions(i + 1, std::max(blocks, b + 1));
    }
  };
  partitions(0, 0);
  return best;
}

}  // namespace trident::flexsp::test
