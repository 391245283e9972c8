#pragma once
// parallel.zero.stage: 2: a rank keeps the summed gradient of its own range of the flat parameters only. The model runs
// its layers as one-layer sub-models (core/model/sub_model_runner.h) over this source, which hands out the model's own
// weights and a gradient window of its own: the embeddings' and the final norm's for the pass, and two layer slots
// that the layers' backwards take turns in. As each range's backward ends (the final norm's, each layer's, the
// embeddings'), the range is reduce-scattered over the sharding group (non-blocking: the next layer's backward runs
// meanwhile) and each rank adds the sum of its part into its shard. The model allocates no gradient buffer
// (ModelMemory::grads_in_source): a rank holds its shard, the outer windows, two layer slots and their receive
// buffers, instead of every parameter's gradient.
//
// Every training pass is reduced as it ends: a step's micro-batches are summed in the shard, not in a whole buffer.
// The ranks of the group must therefore make the same reductions in the same order although they may run different
// numbers of passes in a step (data parallelism's replicas, FlexSP's groups): a step begins with the most passes any
// rank of the group runs (begin_step), and a rank that ran fewer makes the remaining passes' reductions with zero
// gradients in finish_step. A training pass outside a step (auto's calibration, which only times passes) is not
// reduced: its gradients are dropped.
#include <cstdint>
#include <vector>

#include "core/model/gpt.h"
#include "core/model/layer_source.h"
#include "core/model/layout.h"
#include "core/tensor/tensor.h"
#include "parallel/comm/communicator.h"

namespace trident {

class GradientShards final : public LayerSource {
 public:
  // The bytes the constructor takes from its allocator for `config` where this rank owns `owned` floats: the shard,
  // the outer windows, the two layer slots and the receive buffers.
  static int64_t memory_bytes(const ModelConfig& config, int64_t owned);

  // Over `group` (in the backend's memory: the sharding group's device communicator) whose rank r owns ranges[r];
  // `across`: the ranks owning the same range in the other groups (parallel.zero.group: node), over which the shard
  // is summed at the end of a step (nullptr: none).
  GradientShards(GPT& model, Allocator& device, Communicator& group, std::vector<FlatRange> ranges,
                 Communicator* across = nullptr);
  ~GradientShards() override;
  GradientShards(const GradientShards&) = delete;
  GradientShards& operator=(const GradientShards&) = delete;

  const FlatRange& owned() const { return ranges_[static_cast<std::size_t>(rank_)]; }
  // The gradient of owned(), summed over the group and over the step's passes: grads()[i] is parameter
  // owned().offset + i's.
  float* grads() { return shard_.data<float>(); }
  const float* grads() const { return shard_.data<float>(); }

  // A step's training passes are reduced from here; `passes`: the most any rank of the group runs in the step.
  void begin_step(int passes);
  // Makes the reductions of the passes this rank did not run (zero gradients), then waits for every reduction (and
  // sums the shard across the groups): the shard holds the step's gradient. Collective over the group.
  void finish_step();

  Outer begin_pass(bool train, int passes) override;
  void end_pass(bool train) override;
  ParamWindow acquire(int sub_model, bool backward) override;
  void release(int sub_model, bool backward) override;
  void grads_zeroed() override;
  int64_t copy_activations(std::string label, std::vector<Copy> copies, bool to_host) override;
  void wait_copies(int64_t ticket) override;

 private:
  // The windows of gradient_buckets(layout) `bucket`: 0 the final norm's, L - l layer l's, L + 1 the embeddings'.
  float* bucket_grads(std::size_t bucket);
  // Its window: the pass's weights of the bucket's range, and its gradients.
  ParamWindow window(std::size_t bucket);
  // Starts summing `bucket`'s gradient window over the group; its receive buffer (the slot's) must be free.
  void reduce(std::size_t bucket);
  // Waits for the reduction through receive buffer `slot` and adds this rank's part into the shard.
  void settle(int slot);
  void settle_all();
  void zero(float* data, int64_t numel);
  int slot_of(std::size_t bucket) const;  // which receive buffer a bucket's reduction uses

  GPT& model_;
  Communicator& group_;
  Communicator* across_;
  int rank_ = 0;
  std::vector<FlatRange> ranges_;
  std::vector<std::pair<int64_t, int64_t>> buckets_;
  int layers_ = 0;
  Tensor shard_;
  Tensor final_norm_, embeddings_;  // the outer windows' gradients
  Tensor layer_slots_[2];           // layer l's gradients in slot l % 2
  Tensor received_[4];              // receive buffers: the final norm's, the embeddings', a layer slot's each
  struct Pending {
    RequestPtr request;
    int64_t shard_at = 0, numel = 0;  // where in the shard this rank's part lands
  };
  Pending pending_[4];
  ParamWindow weights_;  // the pass's: resident_weights()
  bool in_step_ = false;
  int step_passes_ = 0, passes_run_ = 0;
  bool train_pass_ = false;
};

}  // namespace trident
