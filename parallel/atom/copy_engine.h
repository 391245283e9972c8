#pragma once
// ATOM's copy engine: one thread that runs copy jobs in the order they were submitted, beside the compute thread, so
// a sub-model's load overlaps the compute of the one before it. FIFO order is what the swapper relies on: a slot's
// gradients drain before the next load into that slot starts. A job moves its bytes through the backend's copy queue
// (kernels/copy_queue.h: memcpy on the CPU, a copy stream on CUDA) and is done when they have arrived; it starts once
// the compute issued before it was submitted has finished (on CUDA, an event on the compute stream), so it never
// overwrites a buffer that compute still reads. Each job is timed (queued, started, ended), which is how the overlap
// is shown without asserting on wall-clock bounds.
//
// An emulated link (`bytes_per_s` > 0) makes each job last at least bytes / rate: a host-to-device copy slower than
// memcpy, to study the overlap on a machine whose "device" memory is host memory.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kernels/copy_queue.h"

namespace trident {

class CopyEngine {
 public:
  explicit CopyEngine(std::unique_ptr<CopyQueue> copies, double bytes_per_s = 0);
  ~CopyEngine();  // finishes the queued jobs
  CopyEngine(const CopyEngine&) = delete;
  CopyEngine& operator=(const CopyEngine&) = delete;

  using Ticket = int64_t;
  // Queues `work` (which moves `bytes` through the queue it is given); `label` names it in the timeline. Called on the
  // thread that issues the compute.
  using Work = std::function<void(CopyQueue&)>;
  Ticket submit(std::string label, int64_t bytes, Work work);
  // Blocks until job `ticket` is done; returns the seconds this call waited.
  double wait(Ticket ticket);
  double wait_all();

  // One finished job, in seconds since the engine started.
  struct Span {
    std::string label;
    int64_t bytes = 0;
    double queued = 0, start = 0, end = 0;
    double cpu_s = 0;  // the copy thread's CPU time on it (memcpy on the CPU backend; not the emulated link's wait)
  };
  std::vector<Span> take_spans();  // the spans finished since the last call
  double now() const;              // seconds since the engine started, the spans' clock

 private:
  struct Job {
    Ticket ticket;
    std::string label;
    int64_t bytes;
    Work work;
    int64_t after;  // the compute mark it waits for
    double queued;
  };
  void run();

  std::unique_ptr<CopyQueue> copies_;
  double bytes_per_s_;
  std::chrono::steady_clock::time_point epoch_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Job> jobs_;
  std::vector<Span> spans_;
  Ticket submitted_ = 0, done_ = 0;  // jobs run in ticket order: `done_` is the last finished
  bool stopping_ = false;
  std::exception_ptr failure_;  // a job's exception, rethrown by the next wait
  std::thread thread_;
};

}  // namespace trident
