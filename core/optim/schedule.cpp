#include "core/optim/schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace trident {

double learning_rate(const TrainConfig& c, int64_t step) {
  if (step < c.warmup_steps) return c.lr * static_cast<double>(step + 1) / static_cast<double>(c.warmup_steps);
  const int64_t decay_steps = std::max<int64_t>(1, c.steps - 1 - c.warmup_steps);
  const double progress = std::min(1.0, static_cast<double>(step - c.warmup_steps) / static_cast<double>(decay_steps));
  return c.min_lr + 0.5 * (1.0 + std::cos(std::numbers::pi * progress)) * (c.lr - c.min_lr);
}

}  // namespace trident
