#include "parallel/pipeline/entry.h"

#include <spdlog/spdlog.h>

#include "parallel/pipeline/candidate.h"
#include "parallel/pipeline/stages.h"
#include "parallel/pipeline/strategy.h"
#include "parallel/placement/capacity.h"

namespace trident {

namespace {

// A stage's model: the activations of its own layers, as many tokens as device.memory_gb leaves room for.
class StagePlacement final : public ModelPlacement {
 public:
  StagePlacement(const Config& config, Precision precision, Device device, Communicator& ranks)
      : config_(config),
        precision_(precision),
        device_(device),
        rank_(ranks.rank()),
        stages_(ranks.size()),
        stage_(pipeline_stage(config.model, stages_, rank_)),
        capacity_(token_capacity(config, precision, device, stage_memory(stage_))) {}

  int64_t capacity_tokens() const override { return capacity_; }
  ModelMemory memory(Allocator&) const override { return stage_memory(stage_); }
  std::unique_ptr<PlacedRun> attach(GPT&, Allocator&, Allocator&) const override { return nullptr; }
  void log(const GPT&, const Allocator&, const Allocator&) const override {
    log_activation_memory(config_, precision_, device_, capacity_, stage_memory(stage_));
    spdlog::info("pipeline: stage {} of {}, layers [{}, {})", rank_, stages_, stage_.first_layer, stage_.end_layer);
  }

 private:
  const Config& config_;
  Precision precision_;
  Device device_;
  int rank_, stages_;
  PipelineStage stage_;
  int64_t capacity_;
};

std::unique_ptr<ModelPlacement> place(const Config& config, Precision precision, Device device, Communicator& ranks) {
  if (config.parallel.strategy != "pipeline") return nullptr;
  check_pipeline(config, ranks.size());
  return std::make_unique<StagePlacement>(config, precision, device, ranks);
}

std::vector<CandidateSpec> alone(const Config& config, int world) {
  check_pipeline(config, world);
  return {{"pipeline", 1}};
}

// On a described cluster: one stage a device, each stage's activations holding `capacity` tokens.
std::vector<std::unique_ptr<Candidate>> plan(const Config& config, const CandidateSpec&, int world, int64_t capacity,
                                             Device) {
  std::vector<std::unique_ptr<Candidate>> out;
  out.push_back(std::make_unique<PipelineCandidate>(config, world, capacity));
  return out;
}

std::unique_ptr<Strategy> make(const StrategyEnv& env, const CandidateSpec&) {
  return std::make_unique<PipelineStrategy>(env);
}

}  // namespace

const StrategyEntry& pipeline_entry() {
  static const StrategyEntry entry{.names = {"pipeline"}, .alone = alone, .make = make, .plan = plan, .place = place};
  return entry;
}

}  // namespace trident
