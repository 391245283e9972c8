#pragma once
// Where a swapped run puts the model (ATOM on one peer): its layers split into sub-models, the device slots they take
// turns in, the tokens a pass holds, and the host store. Chosen before the model is built, from the config alone.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/config/config.h"
#include "core/model/gpt.h"
#include "parallel/cost/profile.h"
#include "parallel/cost/swap_plan.h"

namespace trident {

struct AtomPlacement {
  std::vector<int> sub_model_starts;  // sub-model i is layers [starts[i], starts[i + 1])
  int slots = 2;                    // parallel.atom.prefetch + 1 (the swapper uses at most one a sub-model)
  int64_t tokens = 0;               // tokens one pass holds (the model's activations)
  // Passes a batch of train.batch_tokens takes: at least train.micro_batches, and as many as whole documents of
  // model.max_seq_len need (a pass holds whole documents, so one of `tokens` holds tokens / max_seq_len of them).
  int64_t passes = 1;
  int64_t pass_tokens = 0;          // the tokens a pass carries in the prediction: the batch over its passes
  // Swapping::round_tokens: where a pass holds less than a batch and every sub-model but the last is stashed, the
  // tokens of a round of passes run sub-model by sub-model (the batch's, or as many passes' as the checkpoints hold);
  // 0: passes one after another
  int64_t round_tokens = 0;
  int64_t runs = 1;  // the model's runs over a batch: rounds of passes run sub-model by sub-model, else passes
  int recomputed = 0;               // Swapping::recomputed: leading sub-models recomputed in backward
  int offloaded = 0;                // Swapping::offloaded: leading sub-models whose activations go to the host
  // Of those, the ones whose activations move: all sub-model by sub-model, else all but the last (whose backward
  // follows while its activations are still on the device).
  int moving_sub_models() const { return round_tokens > 0 ? offloaded : std::max(offloaded - 1, 0); }
  int64_t device_bytes = 0;         // the model's activations and checkpoints, the swapper's slots and resident part
  int64_t host_bytes = 0;           // the store: fp32 weights, gradients, AdamW m and v, offloaded activations
  // With a profile: the swap schedule's prediction for this partition (parallel/cost/swap_plan.h) for a run (a pass,
  // or a round of passes as one pass of its tokens), and the layer costs and device it was made from.
  std::optional<cost::SwapPlan> predicted;
  std::optional<cost::SwapPlan> predicted_later;  // a later run of a batch in several (gradients load too)
  std::vector<cost::LayerCost> layers;
  cost::SwapDevice device;
};

// The start-up log's lines for `placement`: the sub-models, their slots, a pass's tokens and what happens to the
// activations, the device and host-store memory against their budgets (`device`, `store`: the run's allocators);
// with a profile, the swap schedule's prediction.
void log_placement(const AtomPlacement& placement, const Config& config, const Allocator& device,
                   const Allocator& store);

// Whether this run swaps: parallel.strategy atom, or auto when the model, its gradients and AdamW state do not fit
// device.memory_gb with room for one token's activations; every rank is then a peer with its own swapped replica. A
// ConfigError when it must but cannot: a backend other than cpu.
bool swaps(const Config& config);

// The placement: among the partitions into parallel.atom.sub_models sub-models (0: any count), balanced with the
// larger ones last, the candidates that hold a pass of train.batch_tokens tokens with the fewest leading sub-models
// stashed (parallel.atom.activations: keep stashes none, recompute all but the last, offload offloads the fewest
// that fit, auto recomputes the fewest that fit and, with a profile, also offloads the fewest that fit); with a profile
// that has a compute section and network.host_to_device also the swap planner's own split (recomputing), and each
// partition stashing all but its last sub-model in as few passes as its capacity allows, run sub-model by sub-model in
// one round, in rounds of 2, 4, ... passes, or pass by pass. The fastest batch by the swap schedule wins (with a
// profile), else of those that hold a batch the one that stashes the fewest layers, then has the fewest sub-models.
// When none holds a batch (and no profile chose), the finest split recomputing (offloading) all but its last
// sub-model, in the fewest rounds that fit, with the most tokens a pass that fit. A ConfigError naming
// device.memory_gb, parallel.atom.sub_models, parallel.atom.activations or parallel.atom.host_memory_gb when nothing
// fits. `peers_per_host`: the peers whose stores share this host's memory.
AtomPlacement place_atom(const Config& config, Precision precision, Device device,
                         const cost::Profile* profile = nullptr, int peers_per_host = 1);

// `count` sub-models of `layers` layers, as equal as can be, the larger ones last.
std::vector<int> balanced_starts(int64_t layers, int64_t count);

// The host store's budget in bytes: parallel.atom.host_memory_gb, or this machine's memory when 0.
int64_t host_budget_bytes(const Config& config);
// A ConfigError naming parallel.atom.host_memory_gb when `peers_per_host` stores of `num_params` parameters (and
// `offload_bytes` of offloaded activations each) do not fit it.
void check_host_store(const Config& config, int64_t num_params, int peers_per_host = 1, int64_t offload_bytes = 0);

}  // namespace trident
