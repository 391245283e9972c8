#pragma once
// What a run is placed on, settled on every rank before it opens its directory: the backend, the communicators of
// every group its strategies may use, where the model lives (the placement a strategy family supplies), how many
// tokens a rank's activations hold, and the profile the strategies plan with; with the checks that need them
// (the longest document fits, device.memory_gb fits the GPU), and the sharding of the optimizer state (parallel.zero).
#include <cstdint>
#include <optional>

#include "core/config/config.h"
#include "core/model/gpt.h"
#include "core/tensor/allocator.h"
#include "parallel/comm/run_groups.h"
#include "parallel/cost/profile.h"
#include "parallel/placement/model_placement.h"
#include "parallel/zero/sharding.h"

namespace trident {

struct RunSetup {
  explicit RunSetup(const Config& config);  // collective over world()

  // The start-up log's lines on memory: the placement's, or the activations a rank holds.
  void log_memory(const GPT& model, const Allocator& device, const Allocator& host_store) const;

  const Config& config;
  Backend& backend;
  Communicator& ranks;
  int zero_ranks;  // the ranks parallel.zero shards the optimizer state over (1: none)
  RunGroups groups;
  Precision precision;
  std::unique_ptr<Sharding> sharding;      // which range of the optimizer state (and gradients) this rank holds
  // where the model is: a strategy family's, train.recompute's or parallel.zero.stage 2's and 3's, or none
  std::unique_ptr<ModelPlacement> placement;
  int64_t capacity;                          // tokens one rank's activations hold
  std::optional<cost::Profile> profile;    // parallel.select.profile, read and checked
};

}  // namespace trident
