#pragma once
// The CPU backend's copy engine: one thread that runs copy jobs in the order they were submitted, beside the compute
// thread, so a sub-model's load overlaps the compute of the one before it. FIFO order is what the swapper relies on:
// a slot's gradients drain before the next load into that slot starts. Each job is timed (queued, started, ended),
// which is how the overlap is shown without asserting on wall-clock bounds.
//
// An emulated link (`bytes_per_s` > 0) makes each job last at least bytes / rate: a host-to-device copy slower than
// memcpy, to study the overlap on a machine whose "device" memory is host memory.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace trident {

class CopyEngine {
 public:
  explicit CopyEngine(double bytes_per_s = 0);
  ~CopyEngine();  // finishes the queued jobs
  CopyEngine(const CopyEngine&) = delete;
  CopyEngine& operator=(const CopyEngine&) = delete;

  using Ticket = int64_t;
  // Queues `work` (which moves `bytes`); `label` names it in the timeline.
  Ticket submit(std::string label, int64_t bytes, std::function<void()> work);
  // Blocks until job `ticket` is done; returns the seconds this call waited.
  double wait(Ticket ticket);
  double wait_all();

  // One finished job, in seconds since the engine started.
  struct Span {
    std::string label;
    int64_t bytes = 0;
    double queued = 0, start = 0, end = 0;
  };
  std::vector<Span> take_spans();  // the spans finished since the last call
  double now() const;              // seconds since the engine started, the spans' clock

 private:
  struct Job {
    Ticket ticket;
    std::string label;
    int64_t bytes;
    std::function<void()> work;
    double queued;
  };
  void run();

  double bytes_per_s_;
  std::chrono::steady_clock::time_point epoch_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Job> queue_;
  std::vector<Span> spans_;
  Ticket submitted_ = 0, done_ = 0;  // jobs run in ticket order: `done_` is the last finished
  bool stopping_ = false;
  std::exception_ptr failure_;  // a job's exception, rethrown by the next wait
  std::thread thread_;
};

}  // namespace trident
