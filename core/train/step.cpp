#include "core/train/step.h"

#include <cmath>

#include "core/common/error.h"
#include "kernels/cpu/grad_norm.h"
#include "kernels/shared/adamw.h"

namespace trident {

int64_t count_targets(const TokenBatch& b) {
  int64_t n = 0;
  for (int64_t t = 0; t < b.num_tokens; ++t) n += b.targets[t] >= 0;
  return n;
}

StepStats train_step(GPT& model, AdamW& optimizer, const std::vector<TokenBatch>& micro_batches, double lr,
                     const TrainConfig& config) {
  StepStats stats;
  for (const TokenBatch& mb : micro_batches) {
    stats.targets += count_targets(mb);
    stats.tokens += mb.num_tokens;
  }
  if (stats.targets == 0) throw_runtime_error("a training batch has no token with a target");
  const float loss_weight = 1.0f / static_cast<float>(stats.targets);

  model.zero_grads();
  double loss_sum = 0;
  for (const TokenBatch& mb : micro_batches) {
    loss_sum += model.forward_backward(mb, loss_weight);
    stats.flops += model.flops(mb);
  }
  stats.loss = loss_sum / static_cast<double>(stats.targets);
  stats.grad_norm = std::sqrt(cpu::squared_norm(model.grads(), model.num_params()));
  stats.finite = std::isfinite(stats.loss) && std::isfinite(stats.grad_norm);
  if (!stats.finite) return stats;
  const float clip = clip_coefficient(static_cast<float>(stats.grad_norm), static_cast<float>(config.grad_clip));
  optimizer.step(model.params(), model.grads(), static_cast<float>(lr), clip);
  return stats;
}

}  // namespace trident
