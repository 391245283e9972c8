#include "parallel/flexsp/config.h"

#include "core/config/schema.h"

namespace trident {

// Collected by the build into strategy_config_sections() (core/config/schema.h).
ConfigSection flexsp_config_section() {
  return {.strategies = {"flexsp"},
          .keys = {
      {"parallel.flexsp.cluster", StringField{section_member(&FlexspConfig::cluster)},
       "FlexSP: cluster profile file `trident plan` plans for (configs/clusters/); \"\" = trident plan --cluster "
       "(training plans with parallel.select.profile)"},
      {"parallel.flexsp.solver", StringField{section_member(&FlexspConfig::solver), {"fast", "milp"}},
       "FlexSP: `trident plan`'s micro-batch solver: fast (greedy + local search, milliseconds) or milp (CBC, "
       "warm-started from fast); training plans with fast"},
      {"parallel.flexsp.time_limit_s",
       FloatField{.member = section_member(&FlexspConfig::time_limit_s), .min = 0, .min_open = true},
       "FlexSP: CBC's time limit per micro-batch (solver milp); the best plan found by then is used"},
      {"parallel.flexsp.buckets", IntField{section_member(&FlexspConfig::buckets), 1, 256},
       "FlexSP: length buckets per micro-batch in the MILP (Q)"},
      {"parallel.flexsp.micro_batch_tries",
       IntField{section_member(&FlexspConfig::micro_batch_tries), 1, 64},
       "FlexSP: micro-batch counts tried, from the fewest whose tokens fit the cluster (M')"},
      {"parallel.flexsp.too_long",
       StringField{section_member(&FlexspConfig::too_long), {"error", "drop", "split"}},
       "FlexSP: a sequence longer than the whole cluster holds is an error, dropped, or split into pieces"},
      {"parallel.flexsp.inner",
       StringField{section_member(&FlexspConfig::inner), {"auto", "ulysses", "lasp"}},
       "FlexSP: what runs inside each group: ulysses (all-to-alls of the group's tokens; model.n_head must divide by "
       "the world size), lasp (linear attention only: LASP passes the d x d states, parallel.lasp.variant says how) or "
       "auto (lasp for linear attention, else ulysses; under strategy auto, each that can run is a candidate)"},
      {"parallel.flexsp.degrees",
       StringField{section_member(&FlexspConfig::degrees), {"mixed", "single"}},
       "FlexSP: mixed (groups of different sizes side by side, the FlexSP planner) or single (every group of a batch "
       "the one size that is fastest for it: the BatchAda baseline)"},
  }};
}

const FlexspConfig& flexsp_config(const Config& config) {
  return config.parallel.sections.get<FlexspConfig>();
}
FlexspConfig& flexsp_config(Config& config) {
  return config.parallel.sections.get<FlexspConfig>();
}

}  // namespace trident
