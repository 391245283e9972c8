#include "parallel/static_sp/config.h"

#include "core/config/schema.h"

namespace trident {

namespace {

ConfigSection section() {
  return {.keys = {
      {"parallel.sp.method",
       StringField{section_member(&SpConfig::method), {"lasp", "ulysses", "ring"}},
       "sequence parallelism (strategy sp): LASP (linear attention), Ulysses (both types) or Ring Attention "
       "(softmax)"},
      {"parallel.sp.size", IntField{section_member(&SpConfig::size), 1},
       "ranks per sequence-parallel group (contiguous ranks); must divide the world size"},
  }};
}

// Registered when the program is loaded: a program that reads the section has its keys.
const bool registered = register_config_section(section());

}  // namespace

const SpConfig& sp_config(const Config& config) {
  return config.parallel.sections.get<SpConfig>();
}
SpConfig& sp_config(Config& config) {
  return config.parallel.sections.get<SpConfig>();
}

}  // namespace trident
