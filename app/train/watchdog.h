#pragma once
// run.watchdog_s: a rank that stops arriving (frozen, stopped with SIGSTOP, stuck) holds every other rank in its next
// collective forever. Each rank runs a watchdog thread over a communicator of its own. When a step has not completed
// within the deadline — run.watchdog_s, or 10x the longest step so far when that is longer — rank 0's watchdog asks
// every rank's watchdog which step it has completed, names the ranks that did not answer (stopped or dead) or are
// behind, and ends the job with exit 1 (MPI_Abort), so Slurm or mpirun can requeue it. Rank 0 may be the frozen one:
// another rank's watchdog ends the job itself once twice its deadline (plus 10 s) has passed.
// Writing a checkpoint is not timed: it gathers the model and optimizer state over the links, which on a slow link
// takes far longer than a step, and the watchdogs' own messages queue behind it there (a rank busy sending would look
// silent). A rank that dies then ends the job through MPI; one frozen during a checkpoint is not caught.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "parallel/comm/communicator.h"

namespace trident {

class Watchdog {
 public:
  // deadline_s 0, a 1-rank world or MPI without MPI_THREAD_MULTIPLE: no watchdog. Collective over `ranks`.
  Watchdog(Communicator& ranks, double deadline_s);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // A step (and the evaluation that followed it) completed, after `step_s` seconds of its own.
  void step_done(int64_t steps_done, double step_s);

  // For its lifetime (a checkpoint being written) no deadline runs; the next step's clock starts when it ends.
  class Untimed {
   public:
    explicit Untimed(Watchdog& watchdog) : watchdog_(watchdog) { watchdog_.untimed_ = true; }
    ~Untimed() {
      watchdog_.progress_ns_ = now_ns();
      watchdog_.untimed_ = false;
    }
    Untimed(const Untimed&) = delete;
    Untimed& operator=(const Untimed&) = delete;

   private:
    Watchdog& watchdog_;
  };

 private:
  static int64_t now_ns();  // steady clock
  void watch();
  double seconds_since_progress() const;
  [[noreturn]] void end_job(const std::string& why);
  std::string census();  // rank 0: which ranks answer, at which step

  Communicator* comm_ = nullptr;  // the watchdogs' own (null: off)
  double deadline_s_ = 0;
  std::atomic<int64_t> steps_done_{0};
  std::atomic<double> longest_step_s_{0};
  std::atomic<int64_t> progress_ns_{0};  // steady clock at the last progress
  std::atomic<bool> untimed_{false};     // a checkpoint is being written
  std::mutex mutex_;
  std::condition_variable wake_;
  bool quit_ = false;
  std::thread thread_;
};

}  // namespace trident
