#include "parallel/placement/recompute.h"

#include <spdlog/spdlog.h>

#include "core/model/recompute.h"
#include "kernels/common/error.h"
#include "parallel/zero/gradient_shards.h"
#include "parallel/zero/shards.h"

namespace trident {

namespace {

struct RecomputedRun final : PlacedRun {
  RecomputedRun(GPT& model, Allocator& device) : recomputed(model, device) {}
  RecomputedModel recomputed;
};

// parallel.zero.stage 2: the layers run one a layer over the source that keeps this rank's range of the gradients
// (recomputing them as train.recompute says).
struct ShardedGradientRun final : PlacedRun {
  ShardedGradientRun(GPT& model, Allocator& device, Sharding& sharding, const std::string& recompute)
      : source(model, device, sharding.device_group(), sharding.ranges(), sharding.across()),
        runner(model, resident_swapping(model.config(), recompute, true), device),
        sharding_(sharding) {
    runner.set_source(&source);
    sharding.use_gradients(&source);
  }
  ~ShardedGradientRun() override { sharding_.use_gradients(nullptr); }
  ShardedGradientRun(const ShardedGradientRun&) = delete;
  ShardedGradientRun& operator=(const ShardedGradientRun&) = delete;
  GradientShards source;
  SubModelRunner runner;

 private:
  Sharding& sharding_;
};

// A resident model's device bytes as train.recompute keeps its activations (none, selective or full), without its
// gradients where parallel.zero.stage 2 keeps them in the source (counted with the optimizer state).
ModelBytes bytes_as_recomputed(const Config& config, Precision precision, Device device, bool grads_in_source) {
  return [&config, precision, device, grads_in_source](int64_t tokens) {
    return resident_memory_bytes(config.model, tokens, precision, device, config.train.recompute, grads_in_source);
  };
}

class ResidentPlacement final : public ModelPlacement {
 public:
  ResidentPlacement(const Config& config, Precision precision, Device device, int zero_ranks, Sharding* sharding)
      : config_(config),
        zero_ranks_(zero_ranks),
        grads_in_source_(gradients_sharded(config, zero_ranks)),
        sharding_(sharding),
        bytes_(bytes_as_recomputed(config, precision, device, grads_in_source_)),
        capacity_(token_capacity(config, bytes_, zero_ranks)) {
    TRIDENT_CHECK(!grads_in_source_ || (sharding_ && sharding_->shards_gradients()),
                  "parallel.zero.stage 2 placed without its sharding");
  }

  int64_t capacity_tokens() const override { return capacity_; }
  ModelMemory memory(Allocator&) const override {
    return resident_model_memory(config_.model, capacity_, config_.train.recompute, grads_in_source_);
  }
  // stage 2: the runner over the gradients' source; full: the runner that recomputes; selective: none, the model's
  // own backward recomputes
  std::unique_ptr<PlacedRun> attach(GPT& model, Allocator& device, Allocator&) const override {
    if (grads_in_source_)
      return std::make_unique<ShardedGradientRun>(model, device, *sharding_, config_.train.recompute);
    if (config_.train.recompute != "full") return nullptr;
    return std::make_unique<RecomputedRun>(model, device);
  }
  void log(const GPT&, const Allocator&, const Allocator&) const override {
    log_activation_memory(config_, bytes_, capacity_, zero_ranks_);
    if (grads_in_source_)
      spdlog::info("parallel.zero.stage: 2: the layers run one at a time; each range's gradient is reduce-scattered "
                   "as its backward ends, this rank keeping its own range's ({})",
                   format_bytes(static_cast<std::size_t>(GradientShards::memory_bytes(
                       config_.model, sharding_->owned().numel))));
    if (config_.train.recompute == "full")
      spdlog::info("train.recompute: full: one layer's saved arrays and the inputs of {} layer(s) a pass; each "
                   "layer's forward runs again before its backward", config_.model.n_layer - 1);
    else if (config_.train.recompute == "selective")
      spdlog::info("train.recompute: selective: the layers' norm and GELU outputs share one slot; each layer's "
                   "backward computes them again");
  }

 private:
  const Config& config_;
  int zero_ranks_;
  bool grads_in_source_;
  Sharding* sharding_;
  ModelBytes bytes_;
  int64_t capacity_;
};

}  // namespace

std::unique_ptr<ModelPlacement> place_resident_model(const Config& config, Precision precision, Device device,
                                                     int zero_ranks, Sharding* sharding) {
  if (config.train.recompute == "none" && !gradients_sharded(config, zero_ranks)) return nullptr;
  return std::make_unique<ResidentPlacement>(config, precision, device, zero_ranks, sharding);
}

int64_t resident_capacity(const Config& config, Precision precision, Device device, int zero_ranks) {
  return token_capacity(config, bytes_as_recomputed(config, precision, device, gradients_sharded(config, zero_ranks)),
                        zero_ranks);
}

}  // namespace trident
