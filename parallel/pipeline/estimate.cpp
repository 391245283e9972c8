#include "parallel/pipeline/estimate.h"

#include <algorithm>

namespace trident {

cost::StepEstimate pipeline_estimate(const std::vector<Batch>& micro, int stages, int64_t vocab_size,
                                     int64_t value_bytes, const cost::StepCostModel& cost) {
  const cost::RunShape& run = cost.run();
  const auto widest = static_cast<double>((run.n_layer + stages - 1) / stages);
  const double share = widest / static_cast<double>(run.n_layer);  // the slowest stage's part of the model
  const bool links = stages > 1;
  cost::StepEstimate e;
  double paced_s = 0, slowest_s = 0, largest_hop_s = 0;
  for (const Batch& m : micro) {
    const double stage_s = cost.compute_s(m.sequence_lengths(), 1) * share;  // forward + backward, no recompute
    const double bytes = static_cast<double>(m.num_tokens() * run.n_embd * value_bytes);
    const double hop_s = links ? cost.transfer_s(bytes, run.world) : 0;
    e.compute_s += stage_s * (1.0 + 1.0 / 3.0);
    paced_s += std::max(stage_s / 3.0, hop_s) + std::max(stage_s, hop_s);  // forward; recompute + backward
    slowest_s = std::max(slowest_s, stage_s);
    largest_hop_s = std::max(largest_hop_s, hop_s);
    if (links) e.comm_bytes += static_cast<int64_t>(2 * bytes);
  }
  const double fill_s = static_cast<double>(stages - 1) * slowest_s * (1.0 + 1.0 / 3.0);
  e.compute_s += fill_s;
  e.seconds = paced_s + fill_s;
  if (links) {
    const double tied_bytes = 4.0 * static_cast<double>(vocab_size * run.n_embd);
    e.seconds += 2.0 * static_cast<double>(stages - 1) * largest_hop_s + cost.transfer_s(tied_bytes, run.world);
    e.comm_bytes += static_cast<int64_t>(tied_bytes);
  }
  e.comm_s = e.seconds - e.compute_s;
  return e;
}

}  // namespace trident
