#pragma once
// One optimizer step: the strategy runs forward and backward of the global batch over the ranks with the loss
// weighted by 1 / (target tokens in the whole batch), so the summed gradient is the exact global mean; then the
// gradient is clipped by its global norm and AdamW applied, and the strategy told (ATOM's peers average then). The
// loop, `trident bench step` and the PyTorch parity test run exactly this.
#include <cstdint>

#include "core/config/config.h"
#include "core/data/batch.h"
#include "core/model/gpt.h"
#include "core/optim/adamw.h"
#include "parallel/strategy.h"
#include "parallel/zero/sharding.h"

namespace trident {

struct StepStats {
  // All ranks' unless the strategy's ranks step independently (Strategy::independent): then this rank's own.
  double loss = 0;          // mean cross-entropy over the global batch's target tokens
  int64_t tokens = 0;       // tokens processed by all ranks
  int64_t targets = 0;      // tokens with a target, all ranks
  double grad_norm = 0;     // global gradient norm before clipping
  double flops = 0;         // model FLOPs of the step, all ranks (an independent rank: its own)
  bool finite = true;       // loss and gradient norm are finite (else no update was applied)
};

// Applies no update when the loss or the gradient norm is not finite (the caller decides to stop or skip); every
// rank reaches the same decision, since all see the same reduced values. With `sharding` (parallel.zero), `optimizer`
// owns this rank's range and the updated parameters are all-gathered after the update; at stages 2 and 3 the gradient
// of that range is the sharding's and the norm sums the ranges', and at stage 3 so are its weights (updated in place,
// nothing gathered). Collective over all ranks.
StepStats train_step(GPT& model, AdamW& optimizer, Strategy& strategy, const Batch& batch, double lr,
                     const TrainConfig& config, Sharding* sharding = nullptr);

}  // namespace trident
