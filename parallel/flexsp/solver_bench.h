#pragma once
// trident bench milp CONFIG [--cluster FILE]: the FlexSP MILP of each micro-batch (as `trident plan` cuts the
// batches) solved by COIN-OR CBC and by GLPK on the same model with the same MIP start and time limit
// (parallel.flexsp.time_limit_s): solve time, makespan found, proven optimal or not. This is how the planner's
// solver was chosen.
#include "core/config/config.h"
#include "parallel/strategy_entry.h"

namespace trident {

// The cluster is request.profile, else parallel.flexsp.cluster; a ConfigError when neither names one.
void bench_flexsp_solvers(const Config& config, const PlanRequest& request);

}  // namespace trident
