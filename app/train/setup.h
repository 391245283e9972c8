#pragma once
// What a run is placed on, settled on every rank before it opens its directory: the backend, the communicators of
// every group its strategies may use, where the model lives (swapped by ATOM, or a pipeline stage's layers), how many
// tokens a rank's activations hold, and the profile the strategies plan with; with the checks that need them
// (the longest document fits, device.memory_gb fits the GPU).
#include <cstdint>
#include <optional>

#include "core/config/config.h"
#include "core/model/gpt.h"
#include "core/tensor/allocator.h"
#include "parallel/atom/placement.h"
#include "parallel/comm/run_groups.h"
#include "parallel/cost/profile.h"
#include "parallel/pipeline/stages.h"

namespace trident {

struct RunSetup {
  explicit RunSetup(const Config& config);  // collective over world()

  // The start-up log's lines on memory: the swapped model's placement, or the activations a rank holds.
  void log_memory(const GPT& model, const Allocator& device, const Allocator& host_store) const;

  const Config& config;
  Backend& backend;
  Communicator& ranks;
  RunGroups groups;
  Precision precision;
  std::optional<AtomPlacement> placement;  // a swapped model's sub-models, slots and passes
  std::optional<PipelineStage> stage;      // a pipeline stage's layers
  int64_t capacity;                        // tokens one rank's activations hold
  std::optional<cost::Profile> profile;    // parallel.select.profile, read and checked
};

}  // namespace trident
