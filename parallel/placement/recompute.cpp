#include "parallel/placement/recompute.h"

#include <spdlog/spdlog.h>

#include "core/model/recompute.h"

namespace trident {

namespace {

struct RecomputedRun final : PlacedRun {
  RecomputedRun(GPT& model, Allocator& device) : recomputed(model, device) {}
  RecomputedModel recomputed;
};

// A resident model's device bytes as train.recompute keeps its activations (none, selective or full).
ModelBytes bytes_as_recomputed(const Config& config, Precision precision, Device device) {
  return [&config, precision, device](int64_t tokens) {
    return resident_memory_bytes(config.model, tokens, precision, device, config.train.recompute);
  };
}

class RecomputePlacement final : public ModelPlacement {
 public:
  RecomputePlacement(const Config& config, Precision precision, Device device, int zero_ranks)
      : config_(config),
        zero_ranks_(zero_ranks),
        bytes_(bytes_as_recomputed(config, precision, device)),
        capacity_(token_capacity(config, bytes_, zero_ranks)) {}

  int64_t capacity_tokens() const override { return capacity_; }
  ModelMemory memory(Allocator&) const override {
    return resident_model_memory(config_.model, capacity_, config_.train.recompute);
  }
  // full: the runner that recomputes; selective: none, the model's own backward recomputes
  std::unique_ptr<PlacedRun> attach(GPT& model, Allocator& device, Allocator&) const override {
    if (config_.train.recompute != "full") return nullptr;
    return std::make_unique<RecomputedRun>(model, device);
  }
  void log(const GPT&, const Allocator&, const Allocator&) const override {
    log_activation_memory(config_, bytes_, capacity_, zero_ranks_);
    if (config_.train.recompute == "full")
      spdlog::info("train.recompute: full: one layer's saved arrays and the inputs of {} layer(s) a pass; each "
                   "layer's forward runs again before its backward", config_.model.n_layer - 1);
    else
      spdlog::info("train.recompute: selective: the layers' norm and GELU outputs share one slot; each layer's "
                   "backward computes them again");
  }

 private:
  const Config& config_;
  int zero_ranks_;
  ModelBytes bytes_;
  int64_t capacity_;
};

}  // namespace

std::unique_ptr<ModelPlacement> place_recomputed_model(const Config& config, Precision precision, Device device,
                                                       int zero_ranks) {
  if (config.train.recompute == "none") return nullptr;
  return std::make_unique<RecomputePlacement>(config, precision, device, zero_ranks);
}

int64_t resident_capacity(const Config& config, Precision precision, Device device, int zero_ranks) {
  return token_capacity(config, bytes_as_recomputed(config, precision, device), zero_ranks);
}

}  // namespace trident
