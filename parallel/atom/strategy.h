#pragma once
// parallel.strategy: atom: each rank is a peer with a whole replica, run by a swapped model (its LayerSwapper brings
// the sub-models onto the device, parallel/atom/swapper.h). A peer takes its share of the batch's sequences (as data
// parallelism does) in as many passes as its activations need: at least train.micro_batches, more when a
// micro-batch would not fit the tokens a pass holds; gradients accumulate over the passes.
//   parallel.atom.average_every 0 (exact): the peers' gradients are summed every step, the loss normalised by the
//     whole batch's tokens: the step of data parallelism, and of the single rank with that many micro-batches.
//   average_every N: each peer updates its own replica with the mean gradient of its share, and the peers average
//     their parameters every N steps in the background (parallel/atom/averager.h).
#include <memory>
#include <optional>
#include <vector>

#include "parallel/atom/averager.h"
#include "parallel/atom/swapper.h"
#include "parallel/dp/data_parallel.h"
#include "parallel/strategy.h"

namespace trident {

class AtomStrategy final : public Strategy {
 public:
  // env.swapper is the run's swapper, of the model this strategy will be given (null: a resident model, ATOM's
  // averaging peers as a candidate of auto); env.capacity_tokens a pass's tokens.
  explicit AtomStrategy(const StrategyEnv& env);

  std::string name() const override { return "atom"; }
  std::string method() const override { return "atom"; }
  int degree() const override { return 1; }
  // Every document fits a pass.
  Feasibility feasible(const Batch& batch) const override;
  // The passes' compute on one device, plus the recompute of every sub-model but the last (a forward: a third of
  // forward + backward); an averaging round's allreduce spread over the steps between rounds, or the exact mode's
  // gradient allreduce. Copies are taken as hidden.
  cost::StepEstimate estimate(const Batch& batch, const cost::StepCostModel& cost) const override;
  StepSums train(GPT& model, const Batch& batch, float loss_weight) override;
  StepSums evaluate(GPT& model, const Batch& batch) override;
  void after_update(GPT& model) override;
  void settle(GPT& model, AdamW& optimizer) override;
  bool on_every_rank(bool flag) override;
  // Averaging peers with a round deadline (parallel.atom.round_deadline_ms) step on their own.
  bool independent() const override { return independent_; }
  // The step's swaps (sub_models, passes, h2d/d2h/activation bytes, copy and exposed copy times) and averaging
  // (average_started/applied, staleness, average_peers, average_wait_ms; the averaging thread's bytes added to
  // comm_bytes).
  void add_step_metrics(nlohmann::ordered_json& record) const override;
  // DiLoCo's outer momentum (parallel/atom/averager.h).
  StrategyTensors checkpoint_tensors() const override {
    return averager_ ? averager_->outer_state() : StrategyTensors{};
  }
  void restore(const StrategyTensors& tensors) override {
    if (averager_) averager_->restore_outer(tensors);
  }

 private:
  static int64_t my_targets(const std::vector<Batch>& passes);  // tokens with a target in them
  // This peer's share of `batch`, cut into its passes (split_within: at least train.micro_batches).
  std::vector<Batch> my_passes(const Batch& batch) const;

  LayerSwapper* swapper_;  // a swapped model's; null when the model is resident (a candidate of auto)
  DataParallel peers_;
  std::unique_ptr<ParameterAverager> averager_;  // averaging peers; null in the exact mode
  double tokens_ = 0;                            // this peer's tokens in the last step
  int64_t micro_batches_, capacity_;
  double recomputed_share_ = 0;  // layers recomputed / layers
  int64_t every_ = 0;            // steps between averaging rounds (0: exact)
  double slowdown_ = 1;      // this peer's emulated slowdown (parallel.atom.emulate_slowdown), else 1
  bool independent_ = false;  // no per-step collective: sums and decisions are this peer's own
  struct {
    std::optional<SwapStats> swap;
    std::optional<AveragingStats> averaging;
  } report_;  // the last step's
};

}  // namespace trident
