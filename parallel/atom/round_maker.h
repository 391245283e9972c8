#pragma once
// Averaging rounds among the peers that are ready within a deadline (parallel.atom.round_deadline_ms), so a slow
// peer costs only its own throughput: it is left out of the rounds it is late for and joins the next one that forms
// when it is ready.
//
// Every peer runs one round thread over a communicator of its own (MPI_THREAD_MULTIPLE). Rank 0's thread also
// coordinates: the first peer to report ready opens a round; the round closes when every peer still training is
// ready or the deadline has passed since it opened, and its members (the peers ready by then) sum their data over
// a sub-communicator of exactly them (made on first use by its members alone, then cached). A peer alone in a round
// sums nothing. Ranks are those of the communicator.
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "parallel/comm/communicator.h"

namespace trident {

class RoundMaker {
 public:
  // Collective over `peers`, which this object's thread alone uses from then on.
  RoundMaker(Communicator& peers, double deadline_s);
  // Closes (every peer's thread stops, after its last round) unless an exception is unwinding: then the thread is
  // left to the job's end (an error ends the whole MPI job).
  ~RoundMaker();
  RoundMaker(const RoundMaker&) = delete;
  RoundMaker& operator=(const RoundMaker&) = delete;

  // Main thread: `data` (count floats, left alone until wait() returns) joins the next round; returns at once.
  void submit(float* data, int64_t count);
  bool done();  // the submitted round has completed
  // Blocks until it has; `data` then holds the sum over the round's members. Returns how many there were.
  int wait();

 private:
  void participate();  // the round thread of every rank but 0
  void coordinate();   // rank 0's: forms the rounds, and runs its own
  void run_round(const std::vector<int32_t>& members);  // sums the submitted data over `members` (-1 padded)
  void close();

  Communicator& peers_;
  double deadline_s_;
  std::mutex mutex_;
  std::condition_variable changed_;
  float* data_ = nullptr;
  int64_t count_ = 0;
  bool submitted_ = false, finished_ = false, closing_ = false;
  int members_ = 0;
  std::thread thread_;
};

}  // namespace trident
