#pragma once
// The run a cost estimate is for (parallel/cost/step_cost.h's RunShape): the world, its nodes and this model.
#include <cstdint>

#include "core/config/config.h"
#include "core/model/gpt.h"
#include "parallel/cost/step_cost.h"

namespace trident {

// `world` ranks on `nodes` nodes of `ranks_per_node` (0: nodes differ), the config's model and precision.
cost::RunShape run_shape(const Config& config, int64_t world, int64_t nodes, int64_t ranks_per_node);

// What the run's sharding keeps outside the model (parallel.zero.stage 2: the gradients, 3: and the weights).
inline InSource source_keeps(const cost::RunShape& run) {
  return run.weight_shards ? InSource::states : run.gradient_shards ? InSource::gradients : InSource::nothing;
}

}  // namespace trident
