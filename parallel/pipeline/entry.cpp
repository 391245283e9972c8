#include "parallel/pipeline/entry.h"

#include "parallel/pipeline/stages.h"
#include "parallel/pipeline/strategy.h"

namespace trident {

namespace {

std::vector<CandidateSpec> alone(const Config& config, int world) {
  check_pipeline(config, world);
  return {{"pipeline", 1}};
}

std::unique_ptr<Strategy> make(const StrategyEnv& env, const CandidateSpec&) {
  return std::make_unique<PipelineStrategy>(env);
}

}  // namespace

const StrategyEntry& pipeline_entry() {
  static const StrategyEntry entry{.names = {"pipeline"}, .alone = alone, .make = make};
  return entry;
}

}  // namespace trident
