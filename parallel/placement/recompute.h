#pragma once
// train.recompute on a model no strategy family places (core/model/recompute.h): its activations sized for the tokens
// device.memory_gb holds as they are kept (selective: without the norms' and GELU's outputs; full: one layer's saved
// arrays and the layers' inputs), and for full the runner that recomputes.
#include <memory>

#include "core/config/config.h"
#include "parallel/placement/model_placement.h"

namespace trident {

// nullptr for train.recompute: none. `zero_ranks`: the ranks the optimizer state is sharded over (parallel.zero).
std::unique_ptr<ModelPlacement> place_recomputed_model(const Config& config, Precision precision, Device device,
                                                       int zero_ranks);

// The tokens a rank's activations hold with a resident model (no strategy family places it), as training sizes them:
// with train.recompute's activations and the optimizer state parallel.zero leaves a rank (`trident plan`).
int64_t resident_capacity(const Config& config, Precision precision, Device device, int zero_ranks);

}  // namespace trident
