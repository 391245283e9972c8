#include "core/train/step.h"

#include <cmath>

#include "core/common/error.h"
#include "kernels/shared/adamw.h"

namespace trident {

int64_t count_targets(const TokenBatch& b) {
  int64_t n = 0;
  for (int64_t t = 0; t < b.num_tokens; ++t) n += b.targets[t] >= 0;
  return n;
}

StepStats train_step(GPT& model, AdamW& optimizer, const std::vector<TokenBatch>& micro_batches,
                     int64_t global_targets, double lr, const TrainConfig& config, DataParallel& dp) {
  if (global_targets == 0) throw_runtime_error("a training batch has no token with a target");
  StepStats stats;
  stats.targets = global_targets;
  const float loss_weight = 1.0f / static_cast<float>(global_targets);

  model.zero_grads();
  double loss_sum = 0, tokens = 0, flops = 0;
  for (std::size_t i = 0; i < micro_batches.size(); ++i) {
    if (i + 1 == micro_batches.size()) dp.reduce_during_backward(model);  // earlier ones only accumulate
    loss_sum += model.forward_backward(micro_batches[i], loss_weight);
    tokens += static_cast<double>(micro_batches[i].num_tokens);
    flops += model.flops(micro_batches[i]);
  }
  if (micro_batches.empty()) dp.reduce_all(model);
  dp.finish(model);
  double totals[3] = {loss_sum, tokens, flops};  // one small allreduce for the three
  dp.sum(totals, 3);
  stats.loss = totals[0] / static_cast<double>(global_targets);
  stats.tokens = static_cast<int64_t>(totals[1]);
  stats.flops = totals[2];
  stats.grad_norm = std::sqrt(model.backend().squared_norm(model.grads(), model.num_params()));
  stats.finite = std::isfinite(stats.loss) && std::isfinite(stats.grad_norm);
  if (!stats.finite) return stats;
  const float clip = clip_coefficient(static_cast<float>(stats.grad_norm), static_cast<float>(config.grad_clip));
  optimizer.step(model.params(), model.grads(), static_cast<float>(lr), clip);
  return stats;
}

}  // namespace trident
