#pragma once
// A model no strategy family places, when it is not simply resident: train.recompute (core/model/recompute.h) sizes its
// activations for the tokens device.memory_gb holds as they are kept (selective: without the norms' and GELU's
// outputs; full: one layer's saved arrays and the layers' inputs, with the runner that recomputes; auto: full's
// tokens, in what the device leaves beside full's bytes, recomputing a pass's layers as needed), and
// parallel.zero.stage 2 (3) runs its layers one at a time over the source that keeps this rank's range of the
// gradients (and weights) (parallel/zero/model_shards.h).
#include <memory>

#include "core/config/config.h"
#include "parallel/placement/model_placement.h"
#include "parallel/zero/sharding.h"

namespace trident {

// nullptr for train.recompute: none below stage 2. `zero_ranks`: the ranks parallel.zero shards over; `sharding`:
// this rank's (attach hands it the source at stages 2 and 3; it must outlive what attach returns).
std::unique_ptr<ModelPlacement> place_resident_model(const Config& config, Precision precision, Device device,
                                                     int zero_ranks, Sharding* sharding);

// The device bytes of such a rank that do not grow with its tokens: the model's states as parallel.zero over
// `zero_ranks` leaves them (weights, gradients, AdamW's moments, the sharded stages' windows) and what its activations
// take at any length (`trident plan` computes FlexSP's memory.model_states_gb from them).
int64_t resident_state_bytes(const Config& config, Precision precision, Device device, int zero_ranks);

// The tokens a rank's activations hold with a resident model (no strategy family places it), as training sizes them:
// with train.recompute's activations and the state parallel.zero leaves a rank (`trident plan`).
int64_t resident_capacity(const Config& config, Precision precision, Device device, int zero_ranks);

// train.recompute: auto: the bytes of activations such a rank's passes fit in (SubModelRunner::as_needed_bytes at its
// capacity, with the room device.memory_gb leaves); 0 for the other modes.
int64_t as_needed_room(const Config& config, Precision precision, Device device, int zero_ranks);

}  // namespace trident
