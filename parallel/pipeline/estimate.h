#pragma once
// GPipe's step as the cost model sees it: the estimate PipelineStrategy gives the selector, and the baseline
// ATOM's `trident plan` sets its peers against. Pure function, no MPI.
#include <cstdint>
#include <vector>

#include "core/data/batch.h"
#include "parallel/cost/step_cost.h"

namespace trident {

// `stages` stages of consecutive layers, one a rank of the run (the widest, ceil(n_layer / stages) layers, paces
// them), running the micro-batches `micro` in turn. A stage's forward of a micro-batch is a third of its compute and
// its backward the rest plus the recomputed forward (GPipe's re-materialisation). Each stage boundary carries every
// micro-batch's activations forward and their gradients back (n_embd values of `value_bytes` a token, one message
// each way): where a message takes longer than a stage computes the micro-batch, the link paces the pipeline. Filling
// and draining add stages - 1 times the slowest micro-batch's compute and message each way; the tied embedding's
// gradient (vocab_size x n_embd fp32) crosses once between the first and the last stage.
//   compute_s: the stages' compute on the slowest path; comm_s: what the links add to it; comm_bytes: a boundary's.
cost::StepEstimate pipeline_estimate(const std::vector<Batch>& micro, int stages, int64_t vocab_size,
                                     int64_t value_bytes, const cost::StepCostModel& cost);

}  // namespace trident
