#pragma once
// Learning rate at a step (0-based): linear warmup to train.lr over train.warmup_steps, then cosine decay to
// train.min_lr at the last step.
#include <cstdint>

#include "core/config/config.h"

namespace trident {

double learning_rate(const TrainConfig& config, int64_t step);

}  // namespace trident
