#pragma once
// ATOM's peers averaging their models (docs/methods.md §4.4): every `every` steps each peer offers its parameters,
// weighted by the tokens it trained on since the last round, to an allreduce over all peers (fp32), and keeps
// training. The round completes in the background while the next steps compute: on a thread of its own, over a
// communicator of its own, where MPI allows threads (mpi_thread_multiple), else as a non-blocking allreduce that MPI
// moves along only when this rank calls MPI. `max_staleness` steps after it started (or before the next round, if
// that comes first: a step fixed by the schedule, so runs are reproducible) the peer applies it: params += average -
// what it offered, so the steps it took meanwhile are kept.
// max_staleness 0 applies each round at once (blocking). AdamW moments stay each peer's own between rounds; before a
// checkpoint and at the end of the run, synchronize() makes parameters and moments the peers' mean.
//
// With a round deadline (parallel.atom.round_deadline_ms), rounds are not collectives of every peer: a round takes
// the peers ready within the deadline (parallel/atom/round_maker.h), so a slow peer is left out of the rounds it is
// late for instead of holding the others back; such a round applies as soon as it is done. A dead peer is dropped
// from them (under the fault-tolerant MPI), and a round it was a member of is not applied.
//
// A round over every peer on the averaging thread is a butterfly all-reduce (parallel/atom/butterfly.h), its parts in
// proportion to each peer's bandwidth measured when the averager is built (split_by_bandwidth), or even ones.
//
// DiLoCo (parallel.atom.averaging: diloco): a round's target is not the average itself. Every peer keeps the
// parameters the last round set (global) and an outer momentum m; the distance from global to the average is the
// outer gradient d, and the target is an outer Nesterov step: m = mu m + d; global -= lr (d + mu m). Every peer
// computes the same from the same allreduce. lr 1 with mu 0 is params averaging.
#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "core/checkpoint/strategy_tensors.h"
#include "parallel/atom/butterfly.h"
#include "parallel/atom/round_maker.h"
#include "parallel/atom/swap_stats.h"
#include "parallel/comm/communicator.h"

namespace trident {

// What a round applies: the peers' average, or DiLoCo's outer step towards it.
struct OuterStep {
  bool diloco = false;
  double lr = 1.0;
  double momentum = 0.0;
};

class ParameterAverager {
 public:
  // round_deadline_s 0: every round is an allreduce over all peers; > 0: rounds of the peers ready within it (needs
  // mpi_thread_multiple()). split_by_bandwidth: a round's butterfly parts follow the peers' measured bandwidth (else
  // even parts). Collective over `peers`.
  ParameterAverager(Communicator& peers, int64_t num_params, int64_t every, int64_t max_staleness,
                    OuterStep outer = {}, double round_deadline_s = 0, bool split_by_bandwidth = false);
  ~ParameterAverager();

  // The parameters before the first step of this run (DiLoCo's first global); later calls do nothing.
  void begin(const float* params);
  // After a step's update of `params` (num_params floats), having trained on `tokens` tokens in it. Collective over
  // the peers (every peer calls it once a step).
  AveragingStats after_update(float* params, double tokens);
  // Applies the round in flight, if any. Collective.
  void settle(float* params);
  // Settles, then makes every peer's parameters and AdamW moments (m, v: num_params floats each) their mean over the
  // peers, and starts the schedule again: before a checkpoint and at the end of the run, so a checkpoint holds every
  // peer's state and a run resumed from it continues as the uninterrupted one (with DiLoCo's outer momentum, which
  // checkpoints keep through outer_state). Nothing to do, and nothing sent, when no step came since the last call.
  // Not with a round deadline. Collective.
  void synchronize(float* params, float* m, float* v);

  // DiLoCo's outer momentum, for checkpoints ("diloco.outer_momentum"; none for params averaging or before begin()),
  // and a resumed run's, which begin() then starts from instead of zeros. A tensor of another length is a
  // RuntimeError.
  StrategyTensors outer_state() const;
  void restore_outer(const StrategyTensors& tensors);

  // The butterfly of the rounds on the averaging thread (null without one: one peer, no threads in MPI, or rounds
  // with a deadline), and the bandwidth its parts were cut by (bytes/s per peer; empty for even parts, as when every
  // peer is on one node).
  const ButterflyAllreduce* butterfly() const { return butterfly_.get(); }
  const std::vector<double>& bandwidth() const { return bandwidth_; }

 private:
  void start(const float* params);
  double finish(float* params);  // waits for the pending round and applies it; returns the seconds waited
  bool in_flight() const { return pending_ || worker_.joinable() || submitted_; }
  bool done();  // the round in flight has completed (without waiting)

  Communicator& peers_;
  Communicator* background_ = nullptr;  // the averaging thread's own communicator (null: no threads in MPI)
  std::unique_ptr<ButterflyAllreduce> butterfly_;  // a round over background_
  std::vector<double> bandwidth_;
  int64_t num_params_, every_, max_staleness_;
  OuterStep outer_;
  std::vector<float> global_, momentum_;  // DiLoCo: the parameters the last round set, the outer momentum
  std::vector<float> offered_;   // the parameters this peer offered to the pending round
  std::vector<float> sum_;       // sum over peers of tokens * parameters, then the tokens
  RequestPtr pending_;           // the round as a non-blocking allreduce, or
  std::thread worker_;           // the round on the averaging thread
  std::atomic<bool> worker_done_{false};
  std::unique_ptr<RoundMaker> rounds_;  // with a round deadline: the round thread
  bool submitted_ = false;              // a round handed to it
  int members_ = 0;                     // peers in the last round applied
  int64_t steps_ = 0, started_at_ = 0;
  double tokens_since_ = 0;
  bool synchronized_ = false;  // synchronize() ran and no step came since
};

}  // namespace trident
