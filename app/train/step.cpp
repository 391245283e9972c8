#include "app/train/step.h"

#include <algorithm>
#include <cmath>

#include "kernels/common/error.h"
#include "kernels/shared/adamw.h"

namespace trident {

StepStats train_step(GPT& model, AdamW& optimizer, Strategy& strategy, const Batch& batch, double lr,
                     const TrainConfig& config, Sharding* sharding) {
  const int64_t targets = batch.num_targets();
  if (targets == 0) throw_runtime_error("a training batch has no token with a target");
  model.zero_grads();
  const StepSums sums = strategy.train(model, batch, 1.0f / static_cast<float>(targets));
  StepStats stats;
  stats.targets = static_cast<int64_t>(sums.targets);  // the batch's, or this rank's share's (independent ranks)
  stats.loss = sums.targets > 0 ? sums.loss_sum / sums.targets : 0.0;
  stats.tokens = static_cast<int64_t>(sums.tokens);
  stats.flops = sums.flops;
  const bool sharded_grads = sharding && sharding->shards_gradients();
  stats.grad_norm = std::sqrt(sharded_grads ? sharding->squared_grad_norm(model) : strategy.squared_grad_norm(model));
  stats.finite = strategy.on_every_rank(std::isfinite(stats.loss) && std::isfinite(stats.grad_norm));
  if (!stats.finite) return stats;
  const float clip = clip_coefficient(static_cast<float>(stats.grad_norm), static_cast<float>(config.grad_clip));
  const bool sharded_weights = sharding && sharding->shards_weights();
  optimizer.step(sharded_weights ? sharding->owned_weights(model) : model.params(),
                 sharded_grads ? sharding->owned_grads(model) : model.grads(), static_cast<float>(lr), clip,
                 strategy.updated_ranges(), sharded_grads, sharded_weights);
  if (sharding) sharding->gather_parameters(model);
  strategy.after_update(model);
  return stats;
}

}  // namespace trident
