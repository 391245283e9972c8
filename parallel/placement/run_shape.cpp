#include "parallel/placement/run_shape.h"

#include "core/model/gpt.h"
#include "core/model/layout.h"
#include "parallel/placement/recompute.h"
#include "parallel/zero/model_shards.h"
#include "parallel/zero/shards.h"

namespace trident {

cost::RunShape run_shape(const Config& config, int64_t world, int64_t nodes, int64_t ranks_per_node) {
  const ModelConfig& m = config.model;
  const int64_t num_params = model_layout(m).num_params;
  const int zero = zero_ranks(config, world, ranks_per_node);
  const Precision precision = precision_named(config.train.precision);
  return {.world = world,
          .nodes = nodes,
          .ranks_per_node = ranks_per_node,
          .n_layer = m.n_layer,
          .n_embd = m.n_embd,
          .n_head = m.n_head,
          .num_params = num_params,
          .bytes_per_value = activation_value_bytes(precision),
          .zero_ranks = zero,
          .owned_params = owned_params(config, num_params, zero),
          .gradient_shards = gradients_sharded(config, zero),
          .weight_shards = weights_sharded(config, zero),
          .gradient_shard_bytes = sharded_state_bytes(config, zero),
          .recompute = config.train.recompute,
          .recompute_room_bytes = as_needed_room(config, precision, Device::cpu, zero)};
}

}  // namespace trident
