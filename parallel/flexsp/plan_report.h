#pragma once
// `trident plan` with parallel.strategy: flexsp: the FlexSP planner on a described cluster, batch by batch, beside the
// two baselines it is measured against: static sequence parallelism (one degree for every sequence, sized for the
// longest sequence the config allows, as DeepSpeed-Ulysses runs) and BatchAda (the best single degree for each
// batch). Times are the cost model's estimates (parallel/cost/group_cost_model.h), not measurements.
#include "core/config/config.h"
#include "parallel/strategy_entry.h"

namespace trident {

// The cluster is request.profile, else parallel.flexsp.cluster; a ConfigError when neither names one.
void print_flexsp_plan(const Config& config, const PlanRequest& request);

}  // namespace trident
