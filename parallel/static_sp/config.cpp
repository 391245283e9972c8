#include "parallel/static_sp/config.h"

#include "core/config/schema.h"

namespace trident {

// Collected by the build into strategy_config_sections() (core/config/schema.h).
ConfigSection static_sp_config_section() {
  return {.strategies = {"dp", "sp", "lasp"},
          .keys = {
      {"parallel.sp.method",
       StringField{section_member(&SpConfig::method), {"lasp", "ulysses", "ring", "usp"}},
       "sequence parallelism (strategy sp): LASP (linear attention), Ulysses (both types), Ring Attention (softmax) "
       "or USP (softmax: Ulysses inside a node x Ring across)"},
      {"parallel.sp.softmax_method",
       StringField{section_member(&SpConfig::softmax_method), {"ulysses", "ring", "usp"}},
       "a hybrid model (model.attention: hybrid) with parallel.sp.method: lasp: what its softmax layers run, Ulysses "
       "(model.n_head must divide by parallel.sp.size), Ring Attention or USP (any size)"},
      {"parallel.sp.size", IntField{section_member(&SpConfig::size), 1},
       "ranks per sequence-parallel group (contiguous ranks); must divide the world size"},
  }};
}

const SpConfig& sp_config(const Config& config) {
  return config.parallel.sections.get<SpConfig>();
}
SpConfig& sp_config(Config& config) {
  return config.parallel.sections.get<SpConfig>();
}

}  // namespace trident
