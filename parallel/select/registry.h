#pragma once
// The strategies a run can use, built from its config: today the fixed one that parallel.strategy names.
#include <memory>

#include "parallel/strategy.h"

namespace trident {

// parallel.strategy: `dp` and `auto` (data parallelism, for now), `lasp` (a static sequence-parallel layout of
// parallel.sp.method and parallel.sp.size); `flexsp` and `atom` are configuration errors until they exist.
// Collective over env.world.
std::unique_ptr<Strategy> make_configured_strategy(const StrategyEnv& env);

// The checks make_configured_strategy makes of the config, without building anything (no collective): run before
// any work starts, so a strategy the run cannot use is a ConfigError before the run directory is touched.
void check_configured_strategy(const Config& config, int world_size);

// The sequence-parallel group size parallel.strategy asks for (1 without sequence parallelism): what a rank's
// activations must hold is a micro-batch divided by it.
int configured_sp_size(const Config& config);

}  // namespace trident
