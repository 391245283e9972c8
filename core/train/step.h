#pragma once
// One optimizer step: zero the gradients, forward/backward each of this rank's micro-batches with the loss weighted
// by 1 / (target tokens in the whole global batch) so the gradient is the exact global mean, sum gradients across
// the data-parallel ranks (overlapped with the last micro-batch's backward), clip by the global norm, AdamW. The
// trainer and the PyTorch parity test run exactly this.
#include <cstdint>
#include <vector>

#include "core/config/config.h"
#include "core/model/batch.h"
#include "core/model/gpt.h"
#include "core/optim/adamw.h"
#include "parallel/dp/data_parallel.h"

namespace trident {

struct StepStats {
  double loss = 0;          // mean cross-entropy over the global batch's target tokens
  int64_t tokens = 0;       // tokens processed by all ranks
  int64_t targets = 0;      // tokens with a target, all ranks
  double grad_norm = 0;     // global gradient norm before clipping
  double flops = 0;         // model FLOPs of the step, all ranks
  bool finite = true;       // loss and gradient norm are finite (else no update was applied)
};

int64_t count_targets(const TokenBatch& batch);

// `micro_batches` are this rank's (possibly none); `global_targets` counts the target tokens of the whole global
// batch over all ranks. Applies no update when the loss or the gradient norm is not finite (the caller decides to
// stop or skip); every rank reaches the same decision, since all see the same reduced values.
StepStats train_step(GPT& model, AdamW& optimizer, const std::vector<TokenBatch>& micro_batches,
                     int64_t global_targets, double lr, const TrainConfig& config, DataParallel& dp);

}  // namespace trident
