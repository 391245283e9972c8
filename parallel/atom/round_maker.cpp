#include "parallel/atom/round_maker.h"

#include <algorithm>
#include <chrono>
#include <exception>

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "kernels/common/error.h"
#include "parallel/comm/fault_tolerance.h"

namespace trident {

namespace {

constexpr int kReadyTag = 31;  // peer -> rank 0: 1 = ready for a round, -1 = no more rounds
constexpr int kGroupTag = 32;  // rank 0 -> peer: the round's members, -1 padded to the peer count
constexpr int kPartTag = 33;   // a member -> the round's first: its data (rounds summed point to point)
constexpr int kSumTag = 34;    // the round's first -> a member: 1 and the sum, or 0: the round is dropped

}  // namespace

RoundMaker::RoundMaker(Communicator& peers, double deadline_s)
    : peers_(peers), deadline_s_(deadline_s), point_to_point_(fault_tolerant_mpi()), alive_(peers.size()) {
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

void RoundMaker::finish_round(int members) {
  {
    std::lock_guard lock(mutex_);
    members_ = members;
    finished_ = true;
  }
  changed_.notify_all();
}

// The first member adds the others' data in rank order and sends every one the sum; a member lost before it sent its
// part drops the round for all (the first tells the others; the first lost, each finds it out in its receive).
bool RoundMaker::sum_point_to_point(const std::vector<int>& ranks) {
  if (peers_.rank() != ranks.front()) {
    peers_.send(data_, count_, CommType::f32, ranks.front(), kPartTag);
    int32_t summed = 0;
    peers_.recv(&summed, 1, CommType::i32, ranks.front(), kSumTag);
    if (summed) peers_.recv(data_, count_, CommType::f32, ranks.front(), kSumTag);
    return summed != 0;
  }
  std::vector<float> part(static_cast<std::size_t>(count_));
  std::vector<int> reached;  // the members still there
  bool whole = true;
  for (std::size_t i = 1; i < ranks.size(); ++i) {
    try {
      peers_.recv(part.data(), count_, CommType::f32, ranks[i], kPartTag);
      for (int64_t j = 0; j < count_; ++j) data_[j] += part[static_cast<std::size_t>(j)];
      reached.push_back(ranks[i]);
    } catch (const PeerFailure&) {
      whole = false;
    }
  }
  const int32_t summed = whole ? 1 : 0;
  for (int r : reached) {
    try {
      peers_.send(&summed, 1, CommType::i32, r, kSumTag);
      if (whole) peers_.send(data_, count_, CommType::f32, r, kSumTag);
    } catch (const PeerFailure&) {  // lost after it sent its part: the sum stands for the others
    }
  }
  return whole;
}

void RoundMaker::run_round(const std::vector<int32_t>& members) {
  std::vector<int> ranks;
  for (int32_t m : members)
    if (m >= 0) ranks.push_back(m);
  int summed = static_cast<int>(ranks.size());
  if (ranks.size() > 1 && point_to_point_) {
    try {
      if (!sum_point_to_point(ranks)) throw PeerFailure("a member of the round was lost before it sent its part");
    } catch (const PeerFailure& e) {
      spdlog::warn("atom: an averaging round of peers {} lost a member and is dropped: {}", fmt::join(ranks, ", "),
                   e.what());
      summed = 0;
    }
  } else if (ranks.size() > 1) {
    peers_.subgroup(ranks)->allreduce_sum(data_, count_, CommType::f32);
  }
  finish_round(summed);
}

void RoundMaker::train_alone() {
  alive_ = 1;
  for (;;) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return (submitted_ && !finished_) || closing_; });
    if (!(submitted_ && !finished_)) return;
    lock.unlock();
    finish_round(1);  // the sum of this peer's own data
  }
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
    std::vector<int32_t> members(static_cast<std::size_t>(W));
    try {
      int32_t ready = last ? -1 : 1;
      peers_.send(&ready, 1, CommType::i32, 0, kReadyTag);
      if (last) return;
      peers_.recv(members.data(), W, CommType::i32, 0, kGroupTag);
    } catch (const PeerFailure& e) {
      spdlog::warn("atom: the averaging rounds' coordinator (peer 0) is lost; this peer trains on alone: {}",
                   e.what());
      if (last) return;
      finish_round(1);
      train_alone();
      return;
    }
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
  // a peer found dead: no more rounds wait for it
  auto lost = [&](int p, const PeerFailure& e) {
    posted[p].reset();
    open[p] = false;
    waiting.erase(std::remove(waiting.begin(), waiting.end(), p), waiting.end());
    --alive_;
    spdlog::warn("atom: peer {} is lost; the averaging rounds go on with the {} others: {}", p, alive_.load(),
                 e.what());
  };
  clock::time_point opened;
  for (;;) {
    bool news = false;
    const bool none_waited = waiting.empty();
    for (int p = 1; p < W; ++p) {
      try {
        if (!posted[p] || !posted[p]->test()) continue;
      } catch (const PeerFailure& e) {
        lost(p, e);
        news = true;
        continue;
      }
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
        for (int p : std::vector<int>(waiting)) {
          if (p == 0) {
            own = true;
            continue;
          }
          try {
            peers_.send(members.data(), W, CommType::i32, p, kGroupTag);
            post(p);
          } catch (const PeerFailure& e) {  // the round's other members find it out in their sum
            lost(p, e);
          }
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
