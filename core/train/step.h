#pragma once
// One optimizer step over the micro-batches of a global batch: zero the gradients, forward/backward each micro-batch
// with the loss weighted by 1 / (target tokens in the whole batch) so the gradient is the exact global mean, clip by
// the global norm, AdamW. The trainer and the PyTorch parity test run exactly this.
#include <cstdint>
#include <vector>

#include "core/config/config.h"
#include "core/model/batch.h"
#include "core/model/gpt.h"
#include "core/optim/adamw.h"

namespace trident {

struct StepStats {
  double loss = 0;          // mean cross-entropy over the batch's target tokens
  int64_t tokens = 0;       // tokens processed
  int64_t targets = 0;      // tokens with a target
  double grad_norm = 0;     // global gradient norm before clipping
  double flops = 0;         // model FLOPs of the step
  bool finite = true;       // loss and gradient norm are finite (else no update was applied)
};

int64_t count_targets(const TokenBatch& batch);

// Applies no update when the loss or the gradient norm is not finite (the caller decides to stop or skip).
StepStats train_step(GPT& model, AdamW& optimizer, const std::vector<TokenBatch>& micro_batches, double lr,
                     const TrainConfig& config);

}  // namespace trident
