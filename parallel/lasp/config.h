#pragma once
// parallel.lasp.*: how LASP passes its states, wherever it runs (static SP, FlexSP's groups).
// Declared, documented and registered in config.cpp beside it; configs/README.md lists the keys.
#include <cstdint>
#include <string>

#include "core/config/config.h"

namespace trident {

struct LaspConfig {
  std::string variant = "lasp1";  // lasp1 | lasp2 | auto

  bool operator==(const LaspConfig&) const = default;
};

const LaspConfig& lasp_config(const Config& config);
LaspConfig& lasp_config(Config& config);

}  // namespace trident
