#pragma once
// `trident plan` for parallel.strategy: atom: the swap planner (parallel/cost/swap_plan.h) on this model and a
// described device: the partition of the layers into sub-models, the predicted step, the copy time left exposed,
// and the overlap rule's tokens-per-pass threshold (docs/methods.md §4.3, "The overlap rule"); on a cluster of
// several devices, each a peer with its share of the batch, ATOM's peers (their step and parameter averaging over
// the cluster's link) beside GPipe over the same devices (the pipeline family's estimate, asked through
// PlanRequest::family). Times are the cost model's, not measurements.
#include "core/config/config.h"
#include "parallel/strategy_entry.h"

namespace trident {

// The profile (request.profile, else parallel.select.profile) needs its compute section and network.host_to_device
// (network.device_to_host defaults to it); the device budget is device.memory_gb, a pass holds a peer's share of
// train.batch_tokens in documents of model.max_seq_len; comparing peers also needs the network's links.
void print_atom_plan(const Config& config, const PlanRequest& request);

}  // namespace trident
