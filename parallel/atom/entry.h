#pragma once
// ATOM as a strategy family (parallel/strategy_entry.h): alone when the model is swapped (parallel.strategy: atom,
// or auto when the model does not fit the device resident); under auto, its averaging peers on the resident model.
#include "parallel/strategy_entry.h"

namespace trident {

const StrategyEntry& atom_entry();

}  // namespace trident
