#include "parallel/zero/config.h"

#include "core/config/schema.h"

namespace trident {

// Collected by the build into strategy_config_sections() (core/config/schema.h). Sharding is no strategy: the section
// names none; the strategies that cannot take a stage refuse it (their entry's `shardable`, checked by
// check_sharding_applies in parallel/select/registry.h).
ConfigSection zero_config_section() {
  return {.keys = {
      {"parallel.zero.stage", IntField{section_member(&ZeroConfig::stage), 0, 3},
       "sharded training state: 0 (every rank holds AdamW's moments of every parameter), 1 (each rank holds and "
       "updates those of its range of the flat parameters, then the ranks all-gather the parameters), 2 (stage 1, "
       "and the gradients are reduce-scattered as the backward runs: each rank keeps its range's only) or 3 (stage "
       "2, and each rank keeps its range's weights only: each layer's are gathered before its forward and its "
       "backward); dp, sp and flexsp only"},
      {"parallel.zero.group", StringField{section_member(&ZeroConfig::group), {"world", "node"}},
       "the ranks parallel.zero.stage shards over: world (all ranks) or node (the ranks of each node, the state "
       "replicated across nodes, as HSDP; every node must hold as many ranks)"},
  }};
}

const ZeroConfig& zero_config(const Config& config) {
  return config.parallel.sections.get<ZeroConfig>();
}
ZeroConfig& zero_config(Config& config) {
  return config.parallel.sections.get<ZeroConfig>();
}

}  // namespace trident
