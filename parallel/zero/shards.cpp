#include "parallel/zero/shards.h"

#include <algorithm>
#include <string>

#include "kernels/common/error.h"
#include "parallel/zero/config.h"
#include "parallel/zero/model_shards.h"

namespace trident {

std::vector<FlatRange> shard_ranges(int64_t numel, int ranks) {
  TRIDENT_CHECK(numel >= 0 && ranks >= 1, "{} floats over {} ranks", numel, ranks);
  const int64_t units = (numel + kShardAlign - 1) / kShardAlign;
  std::vector<FlatRange> out;
  int64_t unit = 0;
  for (int r = 0; r < ranks; ++r) {
    const int64_t mine = units / ranks + (r < units % ranks ? 1 : 0);
    const int64_t begin = std::min(numel, unit * kShardAlign), end = std::min(numel, (unit + mine) * kShardAlign);
    out.push_back({begin, end - begin});
    unit += mine;
  }
  return out;
}

int zero_ranks(const Config& config, int64_t world, int64_t ranks_per_node) {
  const ZeroConfig& zero = zero_config(config);
  if (zero.stage == 0) return 1;
  return static_cast<int>(std::max<int64_t>(1, zero.group == "node" ? ranks_per_node : world));
}

int zero_group_ranks(const Config& config, const NodeLayout& world) {
  int ranks = 0;
  for (int n = 0; n < world.nodes; ++n) ranks += world.ranks_on(n);
  if (zero_config(config).group == "world") return zero_ranks(config, ranks, world.ranks_on(0));
  std::string counts;
  bool even = true;
  for (int n = 0; n < world.nodes; ++n) {
    counts += (n > 0 ? ", " : "") + std::to_string(world.ranks_on(n));
    even = even && world.ranks_on(n) == world.ranks_on(0);
  }
  if (!even)
    throw_config_error("parallel.zero.group: node shards inside each node, which needs as many ranks on every node; "
                       "the {} nodes hold {} ranks (use parallel.zero.group: world, or place the ranks evenly)",
                       world.nodes, counts);
  return zero_ranks(config, ranks, world.ranks_on(0));
}

int64_t owned_params(const Config& config, int64_t num_params, int group_ranks) {
  if (zero_config(config).stage == 0) return num_params;
  return shard_ranges(num_params, group_ranks).front().numel;  // the first ranges are the longest
}

}  // namespace trident

namespace trident {

bool gradients_sharded(const Config& config, int group_ranks) {
  return zero_config(config).stage >= 2 && group_ranks > 1;
}

bool weights_sharded(const Config& config, int group_ranks) {
  return zero_config(config).stage >= 3 && group_ranks > 1;
}

InSource sharded_states(const Config& config, int group_ranks) {
  return weights_sharded(config, group_ranks)     ? InSource::states
         : gradients_sharded(config, group_ranks) ? InSource::gradients
                                                  : InSource::nothing;
}

int64_t sharded_state_bytes(const Config& config, int group_ranks) {
  if (!gradients_sharded(config, group_ranks)) return 0;
  return ModelShards::memory_bytes(config.model,
                                   owned_params(config, model_layout(config.model).num_params, group_ranks),
                                   weights_sharded(config, group_ranks), precision_named(config.train.precision));
}

}  // namespace trident
