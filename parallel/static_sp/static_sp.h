#pragma once
// Static layouts: the world as `world / sp_size` data-parallel replicas of one sequence-parallel group of `sp_size`
// consecutive ranks (node-major order, so a group stays on one node whenever sp_size divides each node's ranks), one
// method for every step. Each replica takes a share of the global batch's sequences (token counts balanced), cut
// into micro-batches; a group cuts each micro-batch into contiguous token slices, one per rank (parallel/sp/shard.h),
// and its attention layers run the method's ops (LASP-1, LASP-2, Ulysses, Ring Attention). Gradients are summed over
// every rank with the loss normalised by the global token count, so a step equals the single-rank step.
// sp_size 1 is data parallelism: no group, the local kernels.
#include <memory>
#include <string>
#include <vector>

#include "parallel/dp/data_parallel.h"
#include "parallel/strategy.h"

namespace trident {

// What the model and the world must be for `method` on groups of `sp_size` ranks: a ConfigError naming the key
// otherwise.
void check_static_layout(const ModelConfig& model, const std::string& method, int sp_size, int world);

class StaticSequenceParallel final : public Strategy {
 public:
  // method: "dp" (sp_size 1), "lasp" (LASP-1 or LASP-2 per parallel.lasp.variant; auto times both on the group),
  // "ulysses" or "ring". A method the model cannot run, or a size that does not divide the world, is a ConfigError.
  // Collective over env.world.
  StaticSequenceParallel(const StrategyEnv& env, const std::string& method, int sp_size);
  ~StaticSequenceParallel() override;

  std::string name() const override;
  std::string method() const override { return method_; }
  int sp_size() const override { return sp_size_; }
  Feasibility feasible(const Batch& batch) const override;
  StepSums train(GPT& model, const Batch& batch, float loss_weight) override;
  StepSums evaluate(GPT& model, const Batch& batch) override;

 private:
  struct LocalBatch;
  std::vector<LocalBatch> local_micro_batches(const Batch& batch, int64_t micro_batches) const;

  std::string method_;  // dp, lasp1, lasp2, ulysses, ring
  int sp_size_;
  int64_t micro_batches_;  // train.micro_batches
  int replicas_ = 1, replica_ = 0;
  int64_t capacity_;
  DataParallel dp_;
  Communicator* group_ = nullptr;                 // this rank's sequence-parallel group; nullptr for dp
  std::unique_ptr<Communicator> device_group_;    // the group over NCCL for Ulysses and Ring on the GPU
  std::vector<std::unique_ptr<AttentionOp>> ops_;  // one per layer
  std::vector<AttentionOp*> layer_ops_;
};

}  // namespace trident
