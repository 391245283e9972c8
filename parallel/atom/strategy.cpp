#include "parallel/atom/strategy.h"

#include <algorithm>

#include <fmt/core.h>

#include "kernels/common/error.h"
#include "parallel/static_sp/group_batch.h"

namespace trident {

namespace {

LayerSwapper& swapper_of(const StrategyEnv& env) {
  TRIDENT_CHECK(env.swapper, "parallel.strategy: atom needs the run's layer swapper");
  TRIDENT_CHECK(env.groups.world().size() == 1, "parallel.strategy: atom runs on one rank");
  return *env.swapper;
}

int64_t longest(const Batch& batch) {
  const std::vector<int64_t> lengths = batch.sequence_lengths();
  return lengths.empty() ? 0 : *std::max_element(lengths.begin(), lengths.end());
}

}  // namespace

AtomStrategy::AtomStrategy(const StrategyEnv& env)
    : swapper_(swapper_of(env)), micro_batches_(env.config.train.micro_batches), capacity_(env.capacity_tokens) {
  recomputed_share_ = static_cast<double>(swapper_.segment_starts().back()) /
                      static_cast<double>(env.config.model.n_layer);
}

std::vector<Batch> AtomStrategy::passes(const Batch& batch, int64_t micro_batches, int64_t capacity) {
  if (longest(batch) > capacity) return {};
  for (int n = static_cast<int>(micro_batches);; ++n) {
    std::vector<Batch> parts = split_micro_batches(batch, n);
    int64_t largest = 0;
    for (const Batch& p : parts) largest = std::max(largest, p.num_tokens());
    if (largest > capacity) continue;  // ends by n = sequences at the latest: one document a part fits
    std::erase_if(parts, [](const Batch& p) { return p.num_tokens() == 0; });
    return parts;
  }
}

Feasibility AtomStrategy::feasible(const Batch& batch) const {
  if (const int64_t n = longest(batch); n > capacity_)
    return {false, fmt::format("atom: a document of {} tokens is longer than the {} tokens a pass holds", n,
                               capacity_)};
  return {};
}

cost::StepEstimate AtomStrategy::estimate(const Batch& batch, const cost::StepCostModel& cost) const {
  cost::StepEstimate e;
  for (const Batch& pass : passes(batch, micro_batches_, capacity_))
    e.compute_s += cost.compute_s(pass.sequence_lengths(), 1);
  e.compute_s *= 1 + recomputed_share_ / 3;
  e.seconds = e.compute_s;
  return e;
}

StepSums AtomStrategy::train(GPT& model, const Batch& batch, float loss_weight) {
  swapper_.take_stats();  // what evaluation or an earlier step moved is not this step's
  StepSums sums;
  for (Batch& pass : passes(batch, micro_batches_, capacity_)) {
    GroupBatch whole = group_batch(std::move(pass), nullptr, nullptr);
    const TokenBatch view = whole.view();
    sums.loss_sum += model.forward_backward(view, loss_weight);
    sums.tokens += static_cast<double>(view.num_tokens);
    sums.flops += model.flops(view);
  }
  sums.targets = static_cast<double>(batch.num_targets());
  report_ = {};
  report_.swap = swapper_.take_stats();
  return sums;
}

StepSums AtomStrategy::evaluate(GPT& model, const Batch& batch) {
  StepSums sums;
  for (Batch& pass : passes(batch, micro_batches_, capacity_)) {
    GroupBatch whole = group_batch(std::move(pass), nullptr, nullptr);
    const TokenBatch view = whole.view();
    sums.loss_sum += model.forward_loss(view);
    sums.tokens += static_cast<double>(view.num_tokens);
  }
  sums.targets = static_cast<double>(batch.num_targets());
  return sums;
}

}  // namespace trident
