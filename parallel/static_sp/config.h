#pragma once
// parallel.sp.*: the static sequence-parallel candidate parallel.strategy: sp runs (parallel/static_sp/).
// Declared, documented and registered in config.cpp beside it; configs/README.md lists the keys.
#include <cstdint>
#include <string>

#include "core/config/config.h"

namespace trident {

struct SpConfig {
  std::string method = "lasp";  // lasp | ulysses | ring | usp
  std::string softmax_method = "ulysses";  // a hybrid's softmax layers beside LASP: ulysses | ring | usp
  int64_t size = 1;              // ranks per sequence-parallel group

  bool operator==(const SpConfig&) const = default;
};

const SpConfig& sp_config(const Config& config);
SpConfig& sp_config(Config& config);

}  // namespace trident
