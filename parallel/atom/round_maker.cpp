#include "parallel/atom/round_maker.h"

#include <algorithm>
#include <chrono>
#include <exception>

#include "kernels/common/error.h"

namespace trident {

namespace {

constexpr int kReadyTag = 31;  // peer -> rank 0: 1 = ready for a round, -1 = no more rounds
constexpr int kGroupTag = 32;  // rank 0 -> peer: the round's members, -1 padded to the peer count

}  // namespace

RoundMaker::RoundMaker(Communicator& peers, double deadline_s) : peers_(peers), deadline_s_(deadline_s) {
  TRIDENT_CHECK(deadline_s > 0, "a round deadline of {} s", deadline_s);
  thread_ = std::thread([this] { peers_.rank() == 0 ? coordinate() : participate(); });
}

RoundMaker::~RoundMaker() {
  if (std::uncaught_exceptions() > 0) {
    thread_.detach();
    return;
  }
  close();
}

void RoundMaker::close() {
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void RoundMaker::submit(float* data, int64_t count) {
  {
    std::lock_guard lock(mutex_);
    TRIDENT_CHECK(!submitted_, "a round submitted while one is in flight");
    data_ = data;
    count_ = count;
    submitted_ = true;
    finished_ = false;
  }
  changed_.notify_all();
}

bool RoundMaker::done() {
  std::lock_guard lock(mutex_);
  return finished_;
}

int RoundMaker::wait() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return finished_; });
  submitted_ = false;
  finished_ = false;
  return members_;
}

void RoundMaker::run_round(const std::vector<int32_t>& members) {
  std::vector<int> ranks;
  for (int32_t m : members)
    if (m >= 0) ranks.push_back(m);
  if (ranks.size() > 1) peers_.subgroup(ranks)->allreduce_sum(data_, count_, CommType::f32);
  {
    std::lock_guard lock(mutex_);
    members_ = static_cast<int>(ranks.size());
    finished_ = true;
  }
  changed_.notify_all();
}

void RoundMaker::participate() {
  const int W = peers_.size();
  for (;;) {
    bool last = false;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [this] { return (submitted_ && !finished_) || closing_; });
      last = !(submitted_ && !finished_);  // closing with nothing submitted
    }
    int32_t ready = last ? -1 : 1;
    peers_.send(&ready, 1, CommType::i32, 0, kReadyTag);
    if (last) return;
    std::vector<int32_t> members(static_cast<std::size_t>(W));
    peers_.recv(members.data(), W, CommType::i32, 0, kGroupTag);
    run_round(members);
  }
}

void RoundMaker::coordinate() {
  using clock = std::chrono::steady_clock;
  const int W = peers_.size();
  std::vector<int32_t> inbox(static_cast<std::size_t>(W));
  std::vector<RequestPtr> posted(static_cast<std::size_t>(W));
  auto post = [&](int p) { posted[p] = peers_.irecv(&inbox[p], 1, CommType::i32, p, kReadyTag); };
  for (int p = 1; p < W; ++p) post(p);
  std::vector<bool> open(static_cast<std::size_t>(W), true);  // still training: may report ready again
  std::vector<int> waiting;                                    // ready, in no round yet
  clock::time_point opened;
  for (;;) {
    bool news = false;
    const bool none_waited = waiting.empty();
    for (int p = 1; p < W; ++p) {
      if (!posted[p] || !posted[p]->test()) continue;
      posted[p].reset();
      news = true;
      if (inbox[p] < 0) open[p] = false;
      else waiting.push_back(p);
    }
    {
      std::lock_guard lock(mutex_);
      const bool own = submitted_ && !finished_;
      if (own && std::find(waiting.begin(), waiting.end(), 0) == waiting.end()) {
        waiting.push_back(0);
        news = true;
      }
      if (closing_ && !own) open[0] = false;
    }
    if (!waiting.empty()) {
      if (none_waited) opened = clock::now();  // the first to report opens the round
      const auto still = static_cast<std::size_t>(std::count(open.begin(), open.end(), true));
      if (waiting.size() >= still || clock::now() - opened >= std::chrono::duration<double>(deadline_s_)) {
        std::sort(waiting.begin(), waiting.end());
        std::vector<int32_t> members(static_cast<std::size_t>(W), -1);
        std::copy(waiting.begin(), waiting.end(), members.begin());
        bool own = false;
        for (int p : waiting) {
          if (p == 0) {
            own = true;
            continue;
          }
          peers_.send(members.data(), W, CommType::i32, p, kGroupTag);
          post(p);
        }
        waiting.clear();
        if (own) run_round(members);
        continue;
      }
    }
    if (std::none_of(open.begin(), open.end(), [](bool o) { return o; })) return;
    if (!news) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

}  // namespace trident
