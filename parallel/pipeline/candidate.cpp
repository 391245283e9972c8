#include "parallel/pipeline/candidate.h"

#include <fmt/core.h>

#include "parallel/pipeline/estimate.h"
#include "parallel/pipeline/stages.h"

namespace trident {

PipelineCandidate::PipelineCandidate(const Config& config, int stages, int64_t capacity)
    : stages_(stages),
      micro_batches_(config.train.micro_batches),
      capacity_(capacity),
      vocab_size_(config.model.vocab_size),
      value_bytes_(activation_value_bytes(precision_named(config.train.precision))) {
  check_pipeline_stages(config.model, stages);
}

std::vector<Batch> PipelineCandidate::micro_batches(const Batch& batch) const {
  return split_within(batch, static_cast<int>(micro_batches_), capacity_);
}

Feasibility PipelineCandidate::feasible(const Batch& batch) const {
  if (const int64_t n = batch.longest_sequence(); n > capacity_)
    return {false, fmt::format("pipeline: a document of {} tokens is longer than the {} tokens a stage's activations "
                               "hold", n, capacity_)};
  return {};
}

cost::StepEstimate PipelineCandidate::estimate(const Batch& batch, const cost::StepCostModel& cost) const {
  return pipeline_estimate(micro_batches(batch), stages_, vocab_size_, value_bytes_, cost);
}

}  // namespace trident
