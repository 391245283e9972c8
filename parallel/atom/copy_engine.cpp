#include "parallel/atom/copy_engine.h"

#include <exception>

namespace trident {

CopyEngine::CopyEngine(double bytes_per_s)
    : bytes_per_s_(bytes_per_s), epoch_(std::chrono::steady_clock::now()), thread_([this] { run(); }) {}

CopyEngine::~CopyEngine() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

double CopyEngine::now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_).count();
}

CopyEngine::Ticket CopyEngine::submit(std::string label, int64_t bytes, std::function<void()> work) {
  Ticket ticket;
  {
    std::lock_guard lock(mutex_);
    ticket = ++submitted_;
    queue_.push_back({ticket, std::move(label), bytes, std::move(work), now()});
  }
  changed_.notify_all();
  return ticket;
}

double CopyEngine::wait(Ticket ticket) {
  const double start = now();
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return done_ >= ticket || failure_; });
  if (failure_) std::rethrow_exception(failure_);
  return now() - start;
}

double CopyEngine::wait_all() {
  Ticket last;
  {
    std::lock_guard lock(mutex_);
    last = submitted_;
  }
  return wait(last);
}

std::vector<CopyEngine::Span> CopyEngine::take_spans() {
  std::lock_guard lock(mutex_);
  std::vector<Span> out;
  out.swap(spans_);
  return out;
}

void CopyEngine::run() {
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    const double start = now();
    std::exception_ptr failure;
    try {
      job.work();
    } catch (...) {
      failure = std::current_exception();
    }
    if (bytes_per_s_ > 0) {  // the emulated link: the job lasts at least bytes / rate
      const double until = start + static_cast<double>(job.bytes) / bytes_per_s_;
      if (const double left = until - now(); left > 0) std::this_thread::sleep_for(std::chrono::duration<double>(left));
    }
    {
      std::lock_guard lock(mutex_);
      spans_.push_back({std::move(job.label), job.bytes, job.queued, start, now()});
      done_ = job.ticket;
      if (failure && !failure_) failure_ = failure;
    }
    changed_.notify_all();
  }
}

}  // namespace trident
