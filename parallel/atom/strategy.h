#pragma once
// parallel.strategy: atom on one peer: the whole batch on one rank, run by a swapped model (its LayerSwapper brings
// the sub-models onto the device, parallel/atom/swapper.h), in as many passes as its activations need: at least
// train.micro_batches, more when a micro-batch would not fit the tokens a pass holds. Gradients accumulate over the
// passes, so the step is the single-rank step with that many micro-batches. Peers averaging their models
// asynchronously (ATOM's second half) are not available yet.
#include <vector>

#include "parallel/atom/swapper.h"
#include "parallel/strategy.h"

namespace trident {

class AtomStrategy final : public Strategy {
 public:
  // env.swapper is the run's swapper, of the model this strategy will be given; env.capacity_tokens a pass's tokens.
  explicit AtomStrategy(const StrategyEnv& env);

  std::string name() const override { return "atom"; }
  std::string method() const override { return "atom"; }
  int sp_size() const override { return 1; }
  // Every document fits a pass.
  Feasibility feasible(const Batch& batch) const override;
  // The passes' compute on one device, plus the recompute of every sub-model but the last (a forward: a third of
  // forward + backward). Copies are taken as hidden.
  cost::StepEstimate estimate(const Batch& batch, const cost::StepCostModel& cost) const override;
  StepSums train(GPT& model, const Batch& batch, float loss_weight) override;
  StepSums evaluate(GPT& model, const Batch& batch) override;
  Report last_report() const override { return report_; }

  // The passes `batch` runs in: split_micro_batches into the fewest parts (at least `micro_batches`) whose largest
  // fits `capacity` tokens; empty parts dropped. None when a document is longer than `capacity`.
  static std::vector<Batch> passes(const Batch& batch, int64_t micro_batches, int64_t capacity);

 private:
  LayerSwapper& swapper_;
  int64_t micro_batches_, capacity_;
  double recomputed_share_;  // layers recomputed / layers
  Report report_;
};

}  // namespace trident
