#pragma once
// parallel.zero.stage 2 and 3: a rank keeps the summed gradient of its own range of the flat parameters only, and at
// stage 3 that range's weights only. The model runs its layers as one-layer sub-models (core/model/sub_model_runner.h)
// over this source, which hands out each range's weights and a gradient window of its own: the embeddings' and the
// final norm's for the pass, and two layer slots that the layers' backwards take turns in. As each range's backward
// ends (the final norm's, each layer's, the embeddings'), the range is reduce-scattered over the sharding group
// (non-blocking: the next layer's backward runs meanwhile) and each rank adds the sum of its part into its shard. The
// model allocates no gradient buffer (ModelMemory::in_source).
//
// Stage 2 hands out the model's own weights. At stage 3 the model holds none: the embeddings and the final norm are
// all-gathered from the shards into windows of their own when a pass begins, and each layer into one of two weight
// slots (layer l in slot l % 2) when the pass acquires it, the next layer's gather started as the current one is
// handed out (non-blocking: it runs beside the layer's compute). The forward's last two layers are still in their
// slots when the backward begins, so a training pass gathers 2 L - 2 layers and the outer windows once.
//
// Every pass is collective over the group (stage 3 gathers in each; stage 2 reduces each training pass as it ends: a
// step's micro-batches are summed in the shard, not in a whole buffer). The ranks of the group must therefore make the
// same passes in the same order although they may run different numbers of them in a step (data parallelism's
// replicas, FlexSP's groups): a step (or an evaluation) begins with the most passes any rank of the group runs
// (begin_step), and a rank that ran fewer makes the remaining passes' collectives without computing in finish_step
// (zero gradients). Passes outside a step (auto's calibration) must be as many on every rank of the group; a training
// pass outside a step is not reduced: its gradients are dropped.
#include <cstdint>
#include <vector>

#include "core/model/gpt.h"
#include "core/model/layer_source.h"
#include "core/model/layout.h"
#include "core/tensor/tensor.h"
#include "parallel/comm/communicator.h"

namespace trident {

class ModelShards final : public LayerSource {
 public:
  // The bytes the constructor takes from its allocator for `config` where this rank owns `owned` floats: the
  // gradient shard, the outer windows, the two layer slots and the receive buffers; with `weights` (stage 3) also the
  // weight shard, the outer weights and two layer weight slots (and their bf16 copies with `precision` bf16).
  static int64_t memory_bytes(const ModelConfig& config, int64_t owned, bool weights = false,
                              Precision precision = Precision::fp32);

  // Over `group` (in the backend's memory: the sharding group's device communicator) whose rank r owns ranges[r];
  // `across`: the ranks owning the same range in the other groups (parallel.zero.group: node), over which the shard
  // is summed at the end of a step (nullptr: none). `weights`: stage 3, the model holds no weights
  // (InSource::states) and this keeps owned()'s (zeros until set_weights).
  ModelShards(GPT& model, Allocator& device, Communicator& group, std::vector<FlatRange> ranges,
              Communicator* across = nullptr, bool weights = false);
  ~ModelShards() override;
  ModelShards(const ModelShards&) = delete;
  ModelShards& operator=(const ModelShards&) = delete;

  const FlatRange& owned() const { return ranges_[static_cast<std::size_t>(rank_)]; }
  bool shards_weights() const { return weights_sharded_; }
  // The gradient of owned(), summed over the group and over the step's passes: grads()[i] is parameter
  // owned().offset + i's.
  float* grads() { return shard_.data<float>(); }
  const float* grads() const { return shard_.data<float>(); }
  // Stage 3: the weights of owned(), in the backend's memory (weights()[i] is parameter owned().offset + i), which
  // the optimizer updates; set from, and read back into, owned().numel floats on the host.
  float* weights() { return weight_shard_.data<float>(); }
  void set_weights(const float* host_owned);
  std::vector<float> weights_to_host();

  // Seconds this rank waited, since the last call, for the gathers and reductions the compute did not hide (their
  // requests' waits): the part of the stage's communication on the step's path.
  double take_wait_seconds();

  // A step's (or an evaluation's: `train` false) passes begin; `passes`: the most any rank of the group runs in it.
  void begin_step(int passes, bool train = true);
  // A pass of the step this rank does not run, in its place: its collectives, nothing computed (zero gradients). Where
  // ranks skip passes in the middle of a step, the others' passes after it must not wait for theirs (FlexSP's
  // groups exchange inside a micro-batch: every rank's k-th pass is then micro-batch k's).
  void skip_pass();
  // Makes the collectives of the passes this rank did not run (no compute; zero gradients), then, after a training
  // step, waits for every reduction (and sums the shard across the groups): the shard holds the step's gradient.
  // Collective over the group.
  void finish_step();

  Outer begin_pass(bool train, int passes) override;
  void end_pass(bool train) override;
  ParamWindow acquire(int sub_model, bool backward) override;
  void release(int sub_model, bool backward) override;
  void grads_zeroed() override;
  int64_t copy_activations(std::string label, std::vector<Copy> copies, bool to_host) override;
  void wait_copies(int64_t ticket) override;

 private:
  struct Pending {
    RequestPtr request;
    int64_t shard_at = 0, numel = 0;  // where in the shard this rank's part lands
  };
  // What one range of gradient_buckets(layout) passes through on this rank: its gradients, the receive buffer of
  // their reduction and the reduction in flight; at stage 3 its gathered weights, their bf16 copy (train.precision:
  // bf16), the layer they hold this pass (-1: none) and their gather in flight. Four of them (window_of).
  struct Window {
    Tensor grads, received;
    Pending reduction;
    Tensor weights, weights16;
    int layer = -1;
    RequestPtr gathering;
  };
  // The window bucket `bucket` (0 the final norm's, L - l layer l's, L + 1 the embeddings') passes through: 0 the
  // final norm's, 1 the embeddings', 2 + l % 2 layer l's (the layers' backwards and gathers take turns in two).
  int window_of(std::size_t bucket) const;
  Window& window_for(std::size_t bucket) { return windows_[window_of(bucket)]; }
  // The pass's view of a bucket's window: its weights and gradients.
  ParamWindow window(std::size_t bucket);
  // Starts summing `bucket`'s gradients over the group; its window's receive buffer must be free.
  void reduce(std::size_t bucket);
  // Waits for the reduction through window `w` and adds this rank's part into the shard.
  void settle(Window& w);
  void settle_all();
  void zero(float* data, int64_t numel);
  // A pass's calls with nothing computed between them: the collectives of a pass this rank does not run.
  void idle_pass(bool train);
  // Stage 3: starts gathering `bucket`'s weights from the shards into `to` (bucket-sized).
  RequestPtr gather(std::size_t bucket, float* to);
  // Stage 3: layer l's weights into its window (nothing when the window holds them this pass); ready_layer waits
  // for them.
  void fetch_layer(int l);
  void ready_layer(int l);
  // Stage 3: the bf16 copy of the first `numel` gathered weights of `w`, for the matmuls (train.precision: bf16).
  void round(Window& w, int64_t numel);
  // request->wait(), its seconds added to waited_s_.
  void wait(Request& request);

  GPT& model_;
  Communicator& group_;
  Communicator* across_;
  int rank_ = 0;
  std::vector<FlatRange> ranges_;
  std::vector<std::pair<int64_t, int64_t>> buckets_;
  int layers_ = 0;
  Tensor shard_;
  Window windows_[4];
  ParamWindow weights_;  // stage 2, the pass's: resident_weights()
  bool in_step_ = false, step_train_ = true;
  int step_passes_ = 0, passes_run_ = 0;
  bool train_pass_ = false;
  double waited_s_ = 0;

  // stage 3
  bool weights_sharded_ = false;
  Tensor weight_shard_;
};

}  // namespace trident
