#pragma once
// GPipe as a strategy family (parallel/strategy_entry.h): parallel.strategy: pipeline only, never a candidate under
// auto.
#include "parallel/strategy_entry.h"

namespace trident {

const StrategyEntry& pipeline_entry();

}  // namespace trident
