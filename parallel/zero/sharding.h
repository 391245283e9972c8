#pragma once
// Where AdamW's state and the gradients live across the ranks (parallel.zero.*): not a strategy, but a layer under the
// strategies whose ranks hold the same model and sum the whole gradient on every rank (dp, sp, flexsp). At stage 1
// each rank of the sharding group (the world, or its node: parallel.zero.group) owns one range of the flat parameters
// (parallel/zero/shards.h): its AdamW holds that range's moments and updates those parameters alone, then the group
// all-gathers the parameters so every rank again holds the whole updated model. The update of a parameter reads only
// its own gradient and moments, so the step is the one stage 0 takes, bit for bit. At stage 2 the gradients are
// reduce-scattered instead of all-reduced, range by range as the backward finishes them, and a rank keeps only its
// range's sum (parallel/zero/model_shards.h); the clip norm sums the ranges' squares. The sums are stage 0's in
// another order: equal to rounding. At stage 3 a rank keeps its range's weights only too (the same source gathers
// each layer's as a pass needs them), and nothing is gathered after the update.
//
// Memory per rank (fp32, P parameters, G ranks in the group): stage 0 holds 8 P bytes of moments, stage 1
// 8 ceil(P / G) (to a 16-float boundary), stage 2 also 4 ceil(P / G) of gradients instead of 4 P (and the windows of
// ModelShards::memory_bytes), stage 3 also 4 ceil(P / G) of weights instead of 4 P (and their windows). Below stage
// 3 parameters stay whole (and, with train.precision: bf16, the fp32 masters: the model
// reads its norms and embeddings from them). A checkpoint holds each rank's range in a file of its own, written by
// that rank.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/checkpoint/checkpoint.h"
#include "core/model/gpt.h"
#include "core/optim/adamw.h"
#include "parallel/comm/run_groups.h"
#include "parallel/zero/model_shards.h"
#include "parallel/zero/shards.h"

namespace trident {

class Sharding {
 public:
  // This rank owns the whole buffer and nothing moves: stage 0, or a group of one rank.
  explicit Sharding(int64_t num_params);
  // Stage `stage` over the group `group` (its device communicator for the backend's buffers, its host one for host
  // buffers), of a buffer of `num_params` floats.
  // `across`: at stages 2 and 3 over a group smaller than the world (parallel.zero.group: node), the ranks that own
  // the same range in the other groups, over which the step's gradient of the range is summed last.
  Sharding(int stage, int64_t num_params, const RunGroups::RankGroup& group, Communicator* across = nullptr);

  int stage() const { return stage_; }
  // Whether ranks hold ranges of their own: stage 1, 2 or 3 on a group of several ranks.
  bool sharded() const { return group_.device != nullptr && ranges_.size() > 1; }
  const FlatRange& owned() const { return ranges_[static_cast<std::size_t>(rank_)]; }
  const std::vector<FlatRange>& ranges() const { return ranges_; }
  // Whether the world's rank 0 (the run's lead, which writes checkpoints) is in this rank's group, as its rank 0.
  bool holds_lead() const { return !sharded() || group_.host->members().front() == 0; }
  // Stages 2 and 3: the source that keeps this rank's range of the gradients (and weights) (set when the model is
  // built; nullptr before and at stages 0 and 1).
  void use_shards(ModelShards* shards) { shards_ = shards; }
  ModelShards* model_shards() const { return shards_; }
  // Whether this rank keeps only its range of the gradients (stage 2 and 3; the whole range on a group of one rank).
  bool shards_gradients() const { return stage_ >= 2 && group_.device != nullptr; }
  // And of the weights (stage 3): the model holds none.
  bool shards_weights() const { return stage_ >= 3 && group_.device != nullptr; }
  // The device communicators of the group and across the groups (nullptr: none), for the source of stages 2 and 3.
  Communicator& device_group() const { return *group_.device; }
  Communicator* across() const { return across_; }
  // The step's gradient of owned(), the whole gradient summed over the ranks: in the model's buffer at stage 1, in
  // the source's shard at stages 2 and 3.
  float* owned_grads(GPT& model);
  // The weights of owned(), which the optimizer updates: in the model's buffer, or the source's shard at stage 3.
  float* owned_weights(GPT& model);
  // The step's squared gradient norm, from the ranges: each rank's, summed over the group. Collective over the group.
  double squared_grad_norm(GPT& model);

  // After each rank's optimizer updated its own range of model.params(): every range from its owner, on every rank of
  // the group. The gradients are spent by then and serve as the send buffer (a rank's range is copied there first:
  // a collective's send and receive buffers may not overlap). Collective over the group; nothing at stage 3.
  void gather_parameters(GPT& model);
  // Stage 3: the weights of owned() (owned().numel floats on the host) into this rank's shard.
  void set_weights(const float* host_owned);
  // Stage 3: the whole weights, from the shards of the group, on its rank 0's host (empty on the others): for the
  // lead's sample. Collective over the group.
  std::vector<float> weights_on_group_lead();
  // Stage 3: the weights of `layout` into the model file `path` (core/checkpoint/model_io.h's ranged write, `metadata`
  // in its header), each rank writing its own range, none more: the group's rank 0 writes the header into PATH.tmp,
  // every rank its range, and once all have, rank 0 renames it to `path`. A RuntimeError on every rank when any
  // failed. Collective over the group; the ranks must see one file system.
  void write_weights(const std::filesystem::path& path, const ModelLayout& layout,
                     const std::map<std::string, std::string>& metadata);
  // For the checkpoint of `step` in `run_dir`: each rank of the group (whose rank 0 is the run's lead: holds_lead)
  // writes the moments of its own range, a file a range (write_sharded_optimizer below). The shards, in order.
  // Collective over the group.
  std::vector<OptimizerShard> write_optimizer(const std::filesystem::path& run_dir, int64_t step, const AdamW& mine);

 private:
  int stage_ = 0;
  int rank_ = 0;
  RunGroups::RankGroup group_;
  std::vector<FlatRange> ranges_;
  Communicator* across_ = nullptr;
  ModelShards* shards_ = nullptr;
};

// A checkpoint's optimizer state written apart, one range a rank of `group` (`ranges`, in rank order, consecutive and
// covering the parameters): for the checkpoint of `step` in `run_dir`, the group's rank 0 makes the directory it is
// built in (begin_checkpoint), each rank writes the moments of its range from `optimizer` (which owns at least that
// range) as a file of its own, and the ranks agree that every file was written; no moment moves between ranks. The
// shards, in order, the same on every rank; a RuntimeError on every rank when any rank failed. Collective over
// `group`. Sharding::write_optimizer and a pipeline's stages write theirs through it.
std::vector<OptimizerShard> write_sharded_optimizer(Communicator& group, const std::filesystem::path& run_dir,
                                                    int64_t step, const AdamW& optimizer,
                                                    const std::vector<FlatRange>& ranges);

// The sharding of parallel.zero.stage over `groups`' group of `zero_ranks` (zero_group_ranks: made at start-up among
// the degrees); the whole buffer on this rank for stage 0 or one rank.
std::unique_ptr<Sharding> make_sharding(const Config& config, int zero_ranks, RunGroups& groups,
                                        int64_t num_params);

}  // namespace trident
