#include "parallel/atom/swapped_model.h"

#include <optional>

#include "parallel/atom/config.h"
#include "parallel/cost/profile.h"

namespace trident {

SwappedModelPlacement::SwappedModelPlacement(const Config& config, AtomPlacement placement)
    : config_(config), placement_(std::move(placement)) {}

Swapping SwappedModelPlacement::swapping(Allocator& host_store) const {
  return {.sub_model_starts = placement_.sub_model_starts,
          .store = &host_store,
          .recomputed = placement_.recomputed,
          .offloaded = placement_.offloaded,
          .round_tokens = placement_.round_tokens};
}

ModelMemory SwappedModelPlacement::memory(Allocator& host_store) const {
  return SubModelRunner::model_memory(config_.model, placement_.tokens, swapping(host_store));
}

std::unique_ptr<PlacedRun> SwappedModelPlacement::attach(GPT& model, Allocator& device, Allocator& host_store) const {
  return std::make_unique<SwappedRun>(
      model, swapping(host_store), device,
      SwapOptions{.slots = placement_.slots,
                  .copy_bytes_per_s = atom_config(config_).emulate_copy_gb_per_s * 1e9});
}

void SwappedModelPlacement::log(const GPT&, const Allocator& device, const Allocator& host_store) const {
  log_placement(placement_, config_, device, host_store);
}

std::unique_ptr<ModelPlacement> place_swapped_model(const Config& config, Precision precision, Device device,
                                                    Communicator& ranks) {
  if (!swaps(config)) return nullptr;
  std::optional<cost::Profile> link;
  if (!config.parallel.select_profile.empty()) link = cost::read_profile(config.parallel.select_profile);
  return std::make_unique<SwappedModelPlacement>(
      config, place_atom(config, precision, device, link ? &*link : nullptr, ranks.node_group()->size()));
}

}  // namespace trident
