#pragma once
// Data parallelism and static sequence parallelism (LASP-1/2, Ulysses, Ring on groups of one size) as strategy
// families (parallel/strategy_entry.h): both run as StaticSequenceParallel.
#include "parallel/strategy_entry.h"

namespace trident {

// parallel.strategy: dp; under auto, the first candidate.
const StrategyEntry& data_parallel_entry();

// parallel.strategy: sp (lasp, kept for existing configs): parallel.sp.method on groups of parallel.sp.size; under
// auto, every method the model can run on every power-of-two group size that divides the world.
const StrategyEntry& sequence_parallel_entry();

}  // namespace trident
