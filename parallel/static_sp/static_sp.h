#pragma once
// Running a static candidate (candidate.h): each replica takes its share of the global batch's sequences, cut into
// micro-batches; a group cuts each micro-batch into contiguous token slices, one per rank (parallel/sp/shard.h), and
// its attention layers run the method's ops (LASP-1, LASP-2, Ulysses, Ring Attention; in a hybrid, each layer its
// kind's). Gradients are summed over every rank with the loss normalised by the global token count, so a step equals
// the single-rank step. degree 1 is data parallelism: no group, the local kernels.
#include <memory>
#include <string>
#include <vector>

#include "parallel/dp/data_parallel.h"
#include "parallel/static_sp/group_batch.h"
#include "parallel/static_sp/candidate.h"

namespace trident {

class StaticSequenceParallel final : public Strategy {
 public:
  // method: "dp" (degree 1), "lasp1", "lasp2", "lasp" (the variant parallel.lasp.variant names; auto times both on
  // the group), "ulysses" or "ring", or a hybrid's pair ("lasp+ring": candidate.h), on the group of degree ranks
  // env.groups made. A method the model cannot run,
  // or a size that does not divide the world, is a ConfigError. Collective over the world.
  StaticSequenceParallel(const StrategyEnv& env, const std::string& method, int degree);
  ~StaticSequenceParallel() override;

  std::string name() const override { return layout_->name(); }
  std::string method() const override { return layout_->method(); }
  int degree() const override { return layout_->degree(); }
  Feasibility feasible(const Batch& batch) const override { return layout_->feasible(batch); }
  cost::StepEstimate estimate(const Batch& batch, const cost::StepCostModel& cost) const override {
    return layout_->estimate(batch, cost);
  }
  StepSums train(GPT& model, const Batch& batch, float loss_weight) override;
  StepSums evaluate(GPT& model, const Batch& batch) override;

 private:
  // This rank's micro-batches; `most_passes`, when given: the most micro-batches any replica runs.
  std::vector<GroupBatch> local_micro_batches(const Batch& batch, int* most_passes = nullptr) const;

  std::unique_ptr<StaticCandidate> layout_;
  int replica_ = 0;
  DataParallel dp_;
  Communicator* group_ = nullptr;                 // this rank's sequence-parallel group; nullptr for dp
  std::vector<std::unique_ptr<AttentionOp>> ops_;  // one per layer
  std::vector<AttentionOp*> layer_ops_;
};

}  // namespace trident
