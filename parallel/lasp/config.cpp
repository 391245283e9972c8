#include "parallel/lasp/config.h"

#include "core/config/schema.h"

namespace trident {

// Collected by the build into strategy_config_sections() (core/config/schema.h).
ConfigSection lasp_config_section() {
  return {.keys = {
      {"parallel.lasp.variant",
       StringField{.member = section_member(&LaspConfig::variant),
                   .choices = {"lasp1", "lasp2", "auto"},
                   .aliases = {{"ring", "lasp1"}, {"allgather", "lasp2"}}},
       "LASP: lasp1 (LASP-1, states passed rank to rank), lasp2 (LASP-2, one allgather per layer) or auto (strategy "
       "sp: both timed on the group at start-up, the faster runs; strategy auto: both are candidates); the old "
       "names ring and allgather are read as lasp1 and lasp2, with a warning"},
  }};
}

const LaspConfig& lasp_config(const Config& config) {
  return config.parallel.sections.get<LaspConfig>();
}
LaspConfig& lasp_config(Config& config) {
  return config.parallel.sections.get<LaspConfig>();
}

}  // namespace trident
