#include "parallel/atom/copy_engine.h"

#include <time.h>

#include <exception>

namespace trident {

CopyEngine::CopyEngine(std::unique_ptr<CopyQueue> copies, double bytes_per_s)
    : copies_(std::move(copies)),
      bytes_per_s_(bytes_per_s),
      epoch_(std::chrono::steady_clock::now()),
      thread_([this] { run(); }) {}

CopyEngine::~CopyEngine() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

namespace {

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

}  // namespace

double CopyEngine::now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_).count();
}

CopyEngine::Ticket CopyEngine::submit(std::string label, int64_t bytes, Work work) {
  const int64_t after = copies_->mark_compute();
  Ticket ticket;
  {
    std::lock_guard lock(mutex_);
    ticket = ++submitted_;
    jobs_.push_back({ticket, std::move(label), bytes, std::move(work), after, now()});
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
      changed_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping, nothing left
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    const double start = now(), cpu_start = thread_cpu_seconds();
    std::exception_ptr failure;
    try {
      copies_->after_compute(job.after);
      job.work(*copies_);
      copies_->finish();
    } catch (...) {
      failure = std::current_exception();
    }
    const double cpu_s = thread_cpu_seconds() - cpu_start;
    if (bytes_per_s_ > 0) {  // the emulated link: the job lasts at least bytes / rate
      const double until = start + static_cast<double>(job.bytes) / bytes_per_s_;
      if (const double left = until - now(); left > 0) std::this_thread::sleep_for(std::chrono::duration<double>(left));
    }
    {
      std::lock_guard lock(mutex_);
      spans_.push_back({std::move(job.label), job.bytes, job.queued, start, now(), cpu_s});
      done_ = job.ticket;
      if (failure && !failure_) failure_ = failure;
    }
    changed_.notify_all();
  }
}

}  // namespace trident
