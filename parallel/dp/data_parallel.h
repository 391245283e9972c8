#pragma once
// Data parallelism: every rank holds the whole model and a share of the global batch's sequences; gradients are
// summed across ranks bucket by bucket while backward is still running (non-blocking allreduce started from the
// model's grad-ready hook), and the loss is normalised by the token count of the *global* batch, so ranks holding
// different token counts still produce the exact global-mean gradient. A 1-rank group does no communication.
#include <cstdint>
#include <vector>

#include "core/model/gpt.h"
#include "parallel/comm/communicator.h"
#include "parallel/zero/model_shards.h"

namespace trident {

class DataParallel {
 public:
  // `comm` carries host values (loss sums, flags, barriers); `gradients` reduces the gradients where they live: the
  // same MPI communicator on the CPU backend, an NCCL one over the same ranks on CUDA.
  explicit DataParallel(Communicator& comm) : DataParallel(comm, comm) {}
  // `shards`: parallel.zero.stage 2's and 3's source, which reduce-scatters every pass's gradients itself (then the
  // calls below reduce nothing of their own), and at stage 3 gathers every pass's weights.
  DataParallel(Communicator& comm, Communicator& gradients, ModelShards* shards = nullptr)
      : comm_(comm), gradients_(gradients), shards_(shards) {}

  int rank() const { return comm_.rank(); }
  int size() const { return comm_.size(); }
  Communicator& comm() { return comm_; }
  Communicator& gradient_comm() { return gradients_; }

  // Before a step's first pass: `passes` is the most training passes any rank runs in the step (stages 2 and 3
  // reduce each pass, and a rank that runs fewer makes the others' reductions with zeros); `train` false: an
  // evaluation's forward passes (stage 3 gathers the weights in each, and a rank that runs fewer makes the others'
  // gathers).
  void begin(int passes, bool train = true);
  // A pass of the step this rank does not run, where the others run it (ModelShards::skip_pass); nothing without
  // a source.
  void skip_pass();
  // Installs the hook that starts reducing each gradient bucket as soon as backward finishes it.
  void reduce_during_backward(GPT& model);
  // Reduces the gradients bucket by bucket after the backward, the sequence of collectives the hook issues: for a
  // rank with nothing to compute this step (its gradients are zero), or where the reduction must not overlap the
  // backward (FlexSP on NCCL).
  void reduce_all(GPT& model);
  // Waits until every started bucket is reduced, and removes the hook (after a training step or an evaluation).
  void finish(GPT& model);

  // Sums values[0..n) across the ranks, in place.
  void sum(double* values, int n);
  // True on every rank when `flag` is true on any rank.
  bool any(bool flag);

 private:
  void start(float* data, int64_t numel);

  Communicator& comm_;
  Communicator& gradients_;
  ModelShards* shards_;
  std::vector<RequestPtr> pending_;
};

}  // namespace trident
