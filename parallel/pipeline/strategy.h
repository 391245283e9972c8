#pragma once
// parallel.strategy: pipeline: GPipe-style pipeline parallelism, the baseline ATOM is measured against. Rank s is
// stage s (parallel/pipeline/stages.h) and holds its layers' activations. The global batch runs in micro-batches
// (split_within: at least train.micro_batches, more when one would not fit the activations):
//   forward   each stage runs every micro-batch in turn, its input received from the previous stage and its output
//             sent to the next (non-blocking: a stage goes on with the next micro-batch while its output travels);
//   backward  micro-batches in the same order, each stage recomputing its forward from the input it kept (GPipe's
//             re-materialisation: a stage keeps one micro-batch's activations, not M), the gradient at its output
//             received from the next stage and the one at its input sent to the previous. The last stage runs a
//             micro-batch's forward and backward at once, as soon as its input arrives.
// Gradients accumulate over the micro-batches in the single rank's order; the tied embedding's two halves (the first
// stage's lookup, the last one's LM head) are summed between those two stages. Each stage updates its own layers;
// the gradient norm is the sum of the stages' squared norms, so clipping matches the single rank. settle() brings
// rank 0's parameters up to date (each stage sends it its own layers') before a checkpoint and at the end; a
// checkpoint's AdamW state is written by the stages, each its own layers' moments in a file of its own
// (write_optimizer_shards), so nothing but the parameters crosses the network for it.
#include <memory>
#include <vector>

#include "parallel/pipeline/candidate.h"
#include "parallel/pipeline/stage_pass.h"
#include "parallel/pipeline/stages.h"
#include "parallel/strategy.h"

namespace trident {

class PipelineStrategy final : public Strategy {
 public:
  // A pipeline over all of env.groups.world(); the model it is given must hold the activations of this rank's stage
  // (stage_memory(pipeline_stage(model, world, rank))), sized for env.capacity_tokens.
  explicit PipelineStrategy(const StrategyEnv& env);

  std::string name() const override { return "pipeline"; }
  std::string method() const override { return "pipeline"; }
  int degree() const override { return 1; }
  // This run's stages as a candidate (parallel/pipeline/candidate.h).
  Feasibility feasible(const Batch& batch) const override { return candidate_.feasible(batch); }
  cost::StepEstimate estimate(const Batch& batch, const cost::StepCostModel& cost) const override {
    return candidate_.estimate(batch, cost);
  }
  StepSums train(GPT& model, const Batch& batch, float loss_weight) override;
  StepSums evaluate(GPT& model, const Batch& batch) override;
  void after_update(GPT& model) override;
  void settle(GPT& model, AdamW& optimizer) override;
  std::vector<OptimizerShard> write_optimizer_shards(const AdamW& optimizer, const std::filesystem::path& run_dir,
                                                     int64_t step) override;
  double squared_grad_norm(const GPT& model) override;
  ParamRanges updated_ranges() const override { return updates_; }

 private:
  void check_model(const GPT& model) const;
  // Forward of every micro-batch through this stage; the inputs received are kept in inputs_ (training recomputes
  // from them). Returns the sums of the losses, tokens and flops (the last stage's; 0 elsewhere).
  void forward_all(GPT& model, std::vector<Batch>& micro, bool train, float loss_weight, double* totals);
  // Sums the tied embedding's gradient between the first and the last stage.
  void sum_tied_embedding(GPT& model);

  Communicator& world_;
  const Config& config_;
  int stage_, stages_;
  PipelineStage layers_;
  ParamRanges updates_, owns_;
  PipelineCandidate candidate_;
  CommType value_type_;     // the activations' type on the wire (train.precision)
  int64_t value_bytes_;
  std::vector<std::vector<std::byte>> inputs_, outputs_, grads_in_, grads_out_;  // per micro-batch, (N, C)
  bool stale_ = false;  // rank 0's copy of the other stages' parameters is older than theirs (since the last settle)
};

}  // namespace trident
