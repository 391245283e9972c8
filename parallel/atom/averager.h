#pragma once
// ATOM's peers averaging their models (papers.md §4.4): every `every` steps each peer offers its parameters,
// weighted by the tokens it trained on since the last round, to a non-blocking allreduce over all peers, and keeps
// training. The round completes in the background while the next steps compute (MPI moves it along whenever this
// rank calls MPI); at most `max_staleness` steps after it started (or as soon as it is done, when a later update
// finds it so) the peer applies it: params += average - what it offered, so the steps it took meanwhile are kept.
// max_staleness 0 applies each round at once (blocking). A round in flight is applied before a checkpoint and at the
// end of the run (settle). AdamW moments stay each peer's own.
#include <cstdint>
#include <vector>

#include "parallel/atom/swap_stats.h"
#include "parallel/comm/communicator.h"

namespace trident {

class ParameterAverager {
 public:
  ParameterAverager(Communicator& peers, int64_t num_params, int64_t every, int64_t max_staleness);
  ~ParameterAverager();

  // After a step's update of `params` (num_params floats), having trained on `tokens` tokens in it. Collective over
  // the peers (every peer calls it once a step).
  AveragingStats after_update(float* params, double tokens);
  // Applies the round in flight, if any (before a checkpoint, at the end of the run). Collective.
  void settle(float* params);

 private:
  void start(const float* params);
  double finish(float* params);  // waits for the pending round and applies it; returns the seconds waited

  Communicator& peers_;
  int64_t num_params_, every_, max_staleness_;
  std::vector<float> offered_;   // the parameters this peer offered to the pending round
  std::vector<double> sum_;      // sum over peers of tokens * parameters, then the tokens
  RequestPtr pending_;
  int64_t steps_ = 0, started_at_ = 0;
  double tokens_since_ = 0;
};

}  // namespace trident
