#pragma once
// parallel.zero.*: where AdamW's state and the gradients live (parallel/zero/): every rank holding all of them
// (stage 0), each rank the moments of its own range of the flat parameters (stage 1), and its range's gradient alone
// (stage 2), and its range's weights alone (stage 3). Declared, documented and registered in config.cpp
// beside it; configs/README.md lists the keys.
#include <cstdint>
#include <string>

#include "core/config/config.h"

namespace trident {

struct ZeroConfig {
  int64_t stage = 0;           // 0 | 1 | 2
  std::string group = "world";  // world | node: the ranks one copy of the state is sharded over

  bool operator==(const ZeroConfig&) const = default;
};

const ZeroConfig& zero_config(const Config& config);
ZeroConfig& zero_config(Config& config);

}  // namespace trident
