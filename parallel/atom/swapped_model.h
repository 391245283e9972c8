#pragma once
// ATOM's placement of the run's model (parallel/placement/model_placement.h): the weights, gradients and AdamW state in
// the host store, the layers in the sub-models place_atom chose, run by a SubModelRunner that a LayerSwapper feeds.
#include <memory>

#include "parallel/atom/placement.h"
#include "core/model/sub_model_runner.h"
#include "parallel/atom/swapper.h"
#include "parallel/comm/communicator.h"
#include "parallel/placement/model_placement.h"

namespace trident {

// What the placement attached: the runner of the model's passes and the swapper that feeds it.
struct SwappedRun final : PlacedRun {
  SwappedRun(GPT& model, const Swapping& swapping, Allocator& device, SwapOptions options)
      : runner(model, swapping, device), swapper(runner, device, options) {}
  SubModelRunner runner;
  LayerSwapper swapper;  // after the runner: destroyed first
};

class SwappedModelPlacement final : public ModelPlacement {
 public:
  SwappedModelPlacement(const Config& config, AtomPlacement placement);

  int64_t capacity_tokens() const override { return placement_.tokens; }
  ModelMemory memory(Allocator& host_store) const override;
  std::unique_ptr<PlacedRun> attach(GPT& model, Allocator& device, Allocator& host_store) const override;
  void log(const GPT& model, const Allocator& device, const Allocator& host_store) const override;
  int64_t host_store_bytes() const override { return host_budget_bytes(config_); }

 private:
  Swapping swapping(Allocator& host_store) const;

  const Config& config_;
  AtomPlacement placement_;
};

// The placement when the run swaps (swaps(config)), else nullptr. With parallel.select.profile (its compute fit and
// network.host_to_device), the swap planner's partition, whose prediction the log gives. `ranks`: the run's, whose
// node-local peers share this host's memory.
std::unique_ptr<ModelPlacement> place_swapped_model(const Config& config, Precision precision, Device device,
                                                    Communicator& ranks);

}  // namespace trident
