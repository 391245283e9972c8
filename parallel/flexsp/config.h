#pragma once
// parallel.flexsp.*: FlexSP's planner, in training and `trident plan` (parallel/flexsp/).
// Declared, documented and registered in config.cpp beside it; configs/README.md lists the keys.
#include <cstdint>
#include <string>

#include "core/config/config.h"

namespace trident {

struct FlexspConfig {
  std::string cluster;                // cluster profile file; "" = give it with --cluster
  std::string solver = "fast";        // fast | milp
  double time_limit_s = 5.0;          // MILP: CBC's time limit per micro-batch
  int64_t buckets = 16;               // MILP: length buckets per micro-batch (Q)
  int64_t micro_batch_tries = 4;      // micro-batch counts tried from the fewest that can fit (M')
  std::string too_long = "error";     // error | drop | split: a sequence longer than the cluster holds
  std::string inner = "auto";         // auto | ulysses | lasp: how a group's ranks split attention
  std::string degrees = "mixed";      // mixed (FlexSP) | single (one degree per batch: BatchAda)

  bool operator==(const FlexspConfig&) const = default;
};

const FlexspConfig& flexsp_config(const Config& config);
FlexspConfig& flexsp_config(Config& config);

}  // namespace trident
