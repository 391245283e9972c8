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
//
// In a job that survives deaths (the fault-tolerant build under `mpirun --with-ft ulfm`, docs/elastic.md) a round
// sums point to point over the peers' communicator instead: its first member adds the others' data and sends the sum
// back (a star: (m - 1) times the vector in and out of that peer, where the communicator's allreduce moves about
// twice the vector a peer), because making a communicator of the members from one that holds a dead peer may fail or
// block. A peer that dies is dropped from the rounds: rank 0 learns it when its receive from that peer (or a send to
// it) fails, stops counting on it, and forms the next rounds of the others. A round it was a member of is dropped by
// the others (the first member tells them; if the first died, each finds it out in its receive), each keeping its
// own parameters (wait() returns 0). Rank 0 coordinates: if it dies, the others each train on alone.
#include <atomic>
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
  // Blocks until it has; `data` then holds the sum over the round's members. Returns how many there were (0: the
  // round lost a member and was dropped; `data` is then undefined).
  int wait();
  // The peers the rounds still count on: all, less those found dead (as rank 0 knows it; another peer knows only
  // whether rank 0 is lost, then 1: itself).
  int alive() const { return alive_.load(); }

 private:
  void participate();  // the round thread of every rank but 0
  void coordinate();   // rank 0's: forms the rounds, and runs its own
  void run_round(const std::vector<int32_t>& members);  // sums the submitted data over `members` (-1 padded)
  bool sum_point_to_point(const std::vector<int>& ranks);  // false: a member was lost, the round dropped
  void finish_round(int members);  // the submitted round is over, summed over `members` (0: dropped)
  void train_alone();              // the coordinator is lost: every round from now on is this peer's alone
  void close();

  Communicator& peers_;
  double deadline_s_;
  bool point_to_point_;  // rounds summed point to point: a job that survives deaths
  std::mutex mutex_;
  std::condition_variable changed_;
  float* data_ = nullptr;
  int64_t count_ = 0;
  bool submitted_ = false, finished_ = false, closing_ = false;
  int members_ = 0;
  std::atomic<int> alive_{0};
  std::thread thread_;
};

}  // namespace trident
