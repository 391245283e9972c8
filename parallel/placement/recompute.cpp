#include "parallel/placement/recompute.h"

#include <spdlog/spdlog.h>

#include "core/model/recompute.h"
#include "kernels/common/error.h"
#include "parallel/zero/model_shards.h"
#include "parallel/zero/config.h"
#include "parallel/zero/shards.h"

namespace trident {

namespace {

struct RecomputedRun final : PlacedRun {
  RecomputedRun(GPT& model, Allocator& device, const std::string& recompute, int64_t spare_values)
      : recomputed(model, device, recompute, spare_values) {}
  RecomputedModel recomputed;
};

// parallel.zero.stage 2 and 3: the layers run one a layer over the source that keeps this rank's range of the
// gradients (and weights) (recomputing them as train.recompute says).
struct ShardedRun final : PlacedRun {
  ShardedRun(GPT& model, Allocator& device, Sharding& sharding, const std::string& recompute, InSource in_source,
             int64_t spare_values)
      : source(model, device, sharding.device_group(), sharding.ranges(), sharding.across(),
               in_source == InSource::states),
        runner(model, resident_swapping(model.config(), recompute, in_source, spare_values), device),
        sharding_(sharding) {
    runner.set_source(&source);
    sharding.use_shards(&source);
  }
  ~ShardedRun() override { sharding_.use_shards(nullptr); }
  ShardedRun(const ShardedRun&) = delete;
  ShardedRun& operator=(const ShardedRun&) = delete;
  ModelShards source;
  SubModelRunner runner;

 private:
  Sharding& sharding_;
};

// train.recompute: auto: the spare values that fill what the device.memory_gb leaves beside a model of `capacity`
// tokens recomputing every layer but the last (bytes: its bytes by tokens), so that a pass recomputes only where it
// must; 0 for the other modes.
int64_t as_needed_spare(const Config& config, Precision precision, int64_t capacity, const ModelBytes& bytes,
                        int zero_ranks) {
  if (config.train.recompute != "auto") return 0;
  const int64_t free = static_cast<int64_t>(gib_to_bytes(config.device.memory_gb)) - bytes(capacity) -
                       optimizer_state_bytes(config, zero_ranks);
  return SubModelRunner::as_needed_spare(config.model, precision, capacity, free);
}

// The longest pass (at most `capacity` tokens) that recomputes no layer in `room` bytes of activations.
int64_t tokens_recomputing_none(const ModelConfig& model, Precision precision, int64_t room, int64_t capacity) {
  int64_t lo = 0, hi = capacity + 1;  // none at lo (0: trivially), some at hi
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (SubModelRunner::layers_recomputed(model, precision, room, mid) == 0 ? lo : hi) = mid;
  }
  return lo;
}

// A resident model's device bytes as train.recompute keeps its activations (none, selective, full or auto), without its
// gradients (and weights) where parallel.zero.stage 2 (3) keeps them in the source (counted with the optimizer state).
ModelBytes bytes_as_recomputed(const Config& config, Precision precision, Device device, InSource in_source) {
  return [&config, precision, device, in_source](int64_t tokens) {
    return resident_memory_bytes(config.model, tokens, precision, device, config.train.recompute, in_source);
  };
}

class ResidentPlacement final : public ModelPlacement {
 public:
  ResidentPlacement(const Config& config, Precision precision, Device device, int zero_ranks, Sharding* sharding)
      : config_(config),
        precision_(precision),
        zero_ranks_(zero_ranks),
        in_source_(sharded_states(config, zero_ranks)),
        sharding_(sharding),
        bytes_(bytes_as_recomputed(config, precision, device, in_source_)),
        capacity_(token_capacity(config, bytes_, zero_ranks)),
        spare_(as_needed_spare(config, precision, capacity_, bytes_, zero_ranks)) {
    TRIDENT_CHECK(in_source_ == InSource::nothing || (sharding_ && sharding_->shards_gradients() &&
                                                      sharding_->shards_weights() == (in_source_ == InSource::states)),
                  "parallel.zero.stage {} placed without its sharding", zero_config(config).stage);
  }

  int64_t capacity_tokens() const override { return capacity_; }
  ModelMemory memory(Allocator&) const override {
    return resident_model_memory(config_.model, capacity_, config_.train.recompute, in_source_, spare_);
  }
  // stages 2 and 3: the runner over the shards' source; full and auto: the runner that recomputes; selective: none,
  // the model's own backward recomputes
  std::unique_ptr<PlacedRun> attach(GPT& model, Allocator& device, Allocator&) const override {
    if (in_source_ != InSource::nothing)
      return std::make_unique<ShardedRun>(model, device, *sharding_, config_.train.recompute, in_source_, spare_);
    if (config_.train.recompute != "full" && config_.train.recompute != "auto") return nullptr;
    return std::make_unique<RecomputedRun>(model, device, config_.train.recompute, spare_);
  }
  void log(const GPT&, const Allocator&, const Allocator&) const override {
    log_activation_memory(config_, bytes_, capacity_, zero_ranks_);
    if (in_source_ == InSource::gradients)
      spdlog::info("parallel.zero.stage: 2: the layers run one at a time; each range's gradient is reduce-scattered "
                   "as its backward ends, this rank keeping its own range's ({})",
                   format_bytes(static_cast<std::size_t>(sharded_state_bytes(config_, zero_ranks_))));
    else if (in_source_ == InSource::states)
      spdlog::info("parallel.zero.stage: 3: the layers run one at a time, each one's weights gathered from the ranks' "
                   "ranges before its forward and again before its backward; each range's gradient is "
                   "reduce-scattered as its backward ends; this rank keeps its own range's weights and gradient ({})",
                   format_bytes(static_cast<std::size_t>(sharded_state_bytes(config_, zero_ranks_))));
    if (config_.train.recompute == "full")
      spdlog::info("train.recompute: full: one layer's saved arrays and the inputs of {} layer(s) a pass; each "
                   "layer's forward runs again before its backward", config_.model.n_layer - 1);
    else if (config_.train.recompute == "auto") {
      const int64_t room = SubModelRunner::as_needed_bytes(config_.model, precision_, capacity_, spare_);
      spdlog::info("train.recompute: auto: each pass recomputes the forward of only as many of the first {} layer(s) "
                   "as its tokens need to fit {} of activations; a pass of up to {} tokens recomputes none",
                   config_.model.n_layer - 1, format_bytes(static_cast<std::size_t>(room)),
                   tokens_recomputing_none(config_.model, precision_, room, capacity_));
    }
    else if (config_.train.recompute == "selective")
      spdlog::info("train.recompute: selective: the layers' norm and GELU outputs share one slot; each layer's "
                   "backward computes them again");
  }

 private:
  const Config& config_;
  Precision precision_;
  int zero_ranks_;
  InSource in_source_;
  Sharding* sharding_;
  ModelBytes bytes_;
  int64_t capacity_;
  int64_t spare_;  // train.recompute: auto's (Swapping::spare_values)
};

}  // namespace

std::unique_ptr<ModelPlacement> place_resident_model(const Config& config, Precision precision, Device device,
                                                     int zero_ranks, Sharding* sharding) {
  if (config.train.recompute == "none" && sharded_states(config, zero_ranks) == InSource::nothing) return nullptr;
  return std::make_unique<ResidentPlacement>(config, precision, device, zero_ranks, sharding);
}

int64_t resident_state_bytes(const Config& config, Precision precision, Device device, int zero_ranks) {
  return bytes_as_recomputed(config, precision, device, sharded_states(config, zero_ranks))(0) +
         optimizer_state_bytes(config, zero_ranks);
}

int64_t resident_capacity(const Config& config, Precision precision, Device device, int zero_ranks) {
  return token_capacity(config, bytes_as_recomputed(config, precision, device, sharded_states(config, zero_ranks)),
                        zero_ranks);
}

int64_t as_needed_room(const Config& config, Precision precision, Device device, int zero_ranks) {
  if (config.train.recompute != "auto") return 0;
  const ModelBytes bytes = bytes_as_recomputed(config, precision, device, sharded_states(config, zero_ranks));
  const auto budget = static_cast<int64_t>(gib_to_bytes(config.device.memory_gb));
  if (bytes(1) + optimizer_state_bytes(config, zero_ranks) > budget) return 0;  // no room for activations at all
  const int64_t capacity = token_capacity(config, bytes, zero_ranks);
  return SubModelRunner::as_needed_bytes(config.model, precision, capacity,
                                         as_needed_spare(config, precision, capacity, bytes, zero_ranks));
}

}  // namespace trident
