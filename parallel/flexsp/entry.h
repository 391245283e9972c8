#pragma once
// FlexSP as a strategy family (parallel/strategy_entry.h): groups of several power-of-two sizes planned per
// micro-batch, `flexsp` with Ulysses inside, `flexsp-lasp` with LASP inside.
#include "parallel/strategy_entry.h"

namespace trident {

const StrategyEntry& flexsp_entry();

}  // namespace trident
