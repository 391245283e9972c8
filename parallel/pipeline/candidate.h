#pragma once
// GPipe over `stages` ranks as a candidate: what it can run and what that costs, pure functions of the batch (no
// communicator). PipelineStrategy runs it; `trident plan` estimates it on a described cluster, and ATOM's plan sets
// its peers against it (through the registry: parallel/strategy_entry.h).
#include <string>
#include <vector>

#include "parallel/strategy.h"

namespace trident {

class PipelineCandidate final : public Candidate {
 public:
  // One stage a rank of `stages` (a ConfigError when the model has fewer layers); a stage's activations hold
  // `capacity` tokens. The backend is not checked: an estimate holds for any device.
  PipelineCandidate(const Config& config, int stages, int64_t capacity);

  std::string name() const override { return "pipeline"; }
  std::string method() const override { return "pipeline"; }
  int degree() const override { return 1; }
  // Every document fits the tokens a stage's activations hold.
  Feasibility feasible(const Batch& batch) const override;
  // GPipe's schedule over the stages (parallel/pipeline/estimate.h).
  cost::StepEstimate estimate(const Batch& batch, const cost::StepCostModel& cost) const override;

  // The micro-batches of `batch` (split_within: at least train.micro_batches, more when one would not fit): the same
  // on every stage.
  std::vector<Batch> micro_batches(const Batch& batch) const;

 private:
  int stages_;
  int64_t micro_batches_, capacity_, vocab_size_, value_bytes_;
};

}  // namespace trident
