#include "parallel/placement/run_shape.h"

#include "core/model/gpt.h"
#include "core/model/layout.h"

namespace trident {

cost::RunShape run_shape(const Config& config, int64_t world, int64_t nodes, int64_t ranks_per_node) {
  const ModelConfig& m = config.model;
  return {.world = world,
          .nodes = nodes,
          .ranks_per_node = ranks_per_node,
          .n_layer = m.n_layer,
          .n_embd = m.n_embd,
          .n_head = m.n_head,
          .num_params = model_layout(m).num_params,
          .bytes_per_value = activation_value_bytes(precision_named(config.train.precision))};
}

}  // namespace trident
