#include "parallel/select/registry.h"

#include "kernels/common/error.h"
#include "parallel/static_sp/static_sp.h"

namespace trident {

int configured_sp_size(const Config& config) {
  return config.parallel.strategy == "lasp" ? static_cast<int>(config.parallel.sp_size) : 1;
}

void check_configured_strategy(const Config& config, int world_size) {
  const ParallelConfig& p = config.parallel;
  if (p.strategy == "flexsp" || p.strategy == "atom")
    throw_config_error("parallel.strategy: '{}' is not available yet; use 'auto' (data parallelism), 'dp' or 'lasp'",
                       p.strategy);
  if (p.strategy == "lasp") check_static_layout(config.model, p.sp_method, static_cast<int>(p.sp_size), world_size);
}

std::unique_ptr<Strategy> make_configured_strategy(const StrategyEnv& env) {
  const ParallelConfig& p = env.config.parallel;
  check_configured_strategy(env.config, env.world.size());
  if (p.strategy == "lasp")
    return std::make_unique<StaticSequenceParallel>(env, p.sp_method, static_cast<int>(p.sp_size));
  return std::make_unique<StaticSequenceParallel>(env, "dp", 1);
}

}  // namespace trident
