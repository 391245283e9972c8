#pragma once
// The run a cost estimate is for (parallel/cost/step_cost.h's RunShape): the world, its nodes and this model.
#include <cstdint>

#include "core/config/config.h"
#include "parallel/cost/step_cost.h"

namespace trident {

// `world` ranks on `nodes` nodes of `ranks_per_node` (0: nodes differ), the config's model and precision.
cost::RunShape run_shape(const Config& config, int64_t world, int64_t nodes, int64_t ranks_per_node);

}  // namespace trident
