#include "app/train/watchdog.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

namespace trident {

namespace {

constexpr int kQuery = 61, kAnswer = 62;  // rank 0's question, and a rank's steps completed
constexpr double kCensusS = 5;            // how long rank 0 waits for the answers

}  // namespace

int64_t Watchdog::now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Watchdog::Watchdog(Communicator& ranks, double deadline_s) : deadline_s_(deadline_s) {
  if (deadline_s <= 0 || ranks.size() == 1 || !mpi_thread_multiple()) return;
  comm_ = ranks.split(0, ranks.rank());
  progress_ns_ = now_ns();
  thread_ = std::thread([this] { watch(); });
}

Watchdog::~Watchdog() {
  if (!thread_.joinable()) return;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    quit_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Watchdog::step_done(int64_t steps_done, double step_s) {
  steps_done_ = steps_done;
  longest_step_s_ = std::max(longest_step_s_.load(), step_s);
  progress_ns_ = now_ns();
}

double Watchdog::seconds_since_progress() const { return static_cast<double>(now_ns() - progress_ns_) / 1e9; }

void Watchdog::watch() {
  const bool root = comm_->rank() == 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (wake_.wait_for(lock, std::chrono::milliseconds(100), [this] { return quit_; })) return;
    }
    while (!root && comm_->probe(0, kQuery)) {  // rank 0 asks where this rank is
      int64_t query = 0;
      comm_->recv(&query, 1, CommType::i64, 0, kQuery);
      int64_t steps = steps_done_;
      comm_->send(&steps, 1, CommType::i64, 0, kAnswer);
    }
    if (untimed_) continue;
    const double deadline = std::max(deadline_s_, 10 * longest_step_s_.load());
    const double waited = seconds_since_progress();
    if (root && waited > deadline)
      end_job(fmt::format("step {} has not completed within {:.0f} s (run.watchdog_s, or 10x the longest step): {}",
                          steps_done_.load() + 1, deadline, census()));
    if (!root && waited > 2 * deadline + 10)
      end_job(fmt::format("step {} has not completed within {:.0f} s on rank {}, and rank 0's watchdog did not end "
                          "the job: rank 0 is stopped, dead or stuck",
                          steps_done_.load() + 1, waited, comm_->rank()));
  }
}

std::string Watchdog::census() {
  const int W = comm_->size();
  const int64_t query = 1;
  std::vector<RequestPtr> asked;
  for (int r = 1; r < W; ++r) asked.push_back(comm_->isend(&query, 1, CommType::i64, r, kQuery));
  std::vector<int64_t> steps(static_cast<std::size_t>(W), -1);
  steps[0] = steps_done_;
  const int64_t until = now_ns() + static_cast<int64_t>(kCensusS * 1e9);
  for (bool waiting = true; waiting && now_ns() < until;) {
    waiting = false;
    for (int r = 1; r < W; ++r) {
      if (steps[static_cast<std::size_t>(r)] >= 0) continue;
      if (comm_->probe(r, kAnswer)) comm_->recv(&steps[static_cast<std::size_t>(r)], 1, CommType::i64, r, kAnswer);
      else waiting = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // A query a stopped rank never takes stays in flight: the job ends next, so its request is left, not waited for.
  for (RequestPtr& request : asked) static_cast<void>(request.release());
  std::vector<int> silent, behind;
  const int64_t most = *std::max_element(steps.begin(), steps.end());
  for (int r = 0; r < W; ++r) {
    if (steps[static_cast<std::size_t>(r)] < 0) silent.push_back(r);
    else if (steps[static_cast<std::size_t>(r)] < most) behind.push_back(r);
  }
  std::string what;
  if (!silent.empty())
    what = fmt::format("rank {} did not answer within {:.0f} s (stopped, dead or cut off)", fmt::join(silent, ", "),
                       kCensusS);
  if (!behind.empty())
    what += fmt::format("{}rank {} completed fewer steps than step {}", what.empty() ? "" : "; ",
                        fmt::join(behind, ", "), most);
  if (what.empty()) what = fmt::format("every rank answered at step {}: one is stuck inside the next step", most);
  return what;
}

void Watchdog::end_job(const std::string& why) {
  spdlog::error("watchdog: {}", why);
  std::fprintf(stderr, "trident: error: watchdog: %s\n", why.c_str());
  std::fflush(stderr);
  abort_job_if_distributed(1);
  std::_Exit(1);
}

}  // namespace trident
