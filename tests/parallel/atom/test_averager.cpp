// ATOM's peers averaging their parameters (parallel/atom/averager.h), over real MPI ranks: the token-weighted
// average, applied at once or a bounded number of steps later with the steps taken meanwhile kept.
#include <algorithm>
#include <vector>

#include <catch2/catch.hpp>

#include "parallel/atom/averager.h"
#include "parallel/comm/communicator.h"

using namespace trident;

TEST_CASE("peers average their parameters weighted by tokens, at once or a bounded number of steps later",
          "[atom][mpi]") {
  Communicator& peers = world();
  const int W = peers.size(), r = peers.rank();
  const int64_t P = 5;
  const int64_t staleness = GENERATE(0, 1, 3);
  CAPTURE(W, staleness);
  ParameterAverager averager(peers, P, 2, staleness);
  // Each step a peer adds (rank + 1) to every parameter and trains on (rank + 1) tokens.
  std::vector<float> params(P);
  for (int64_t i = 0; i < P; ++i) params[i] = static_cast<float>(10 * r + i);
  auto step = [&] {
    for (float& p : params) p += static_cast<float>(r + 1);
    return averager.after_update(params.data(), r + 1);
  };
  const AveragingStats first = step();
  CHECK(first.started == 0);
  CHECK_FALSE(first.applied);
  const AveragingStats second = step();
  CHECK(second.started == 1);
  double weight = 0, weighted[P] = {0, 0, 0, 0, 0};
  for (int q = 0; q < W; ++q) {  // what every peer offered: 10 q + i + 2 (q + 1), weighted by its 2 (q + 1) tokens
    weight += 2 * (q + 1);
    for (int64_t i = 0; i < P; ++i) weighted[i] += 2.0 * (q + 1) * (10 * q + i + 2 * (q + 1));
  }
  int64_t taken = 0;  // steps since the round started, when it applied
  if (second.applied) {
    CHECK(staleness == 0);
  } else {
    for (;;) {  // it applies by `staleness` steps later, the next round's start (step 4) at the latest
      const AveragingStats s = step();
      ++taken;
      if (s.applied) {
        CHECK(s.staleness == taken);
        CHECK(taken <= std::min<int64_t>(staleness, 2));
        break;
      }
      REQUIRE(taken < 2);
    }
  }
  for (int64_t i = 0; i < P; ++i)  // the average, plus this peer's steps since it offered
    CHECK(params[i] == Approx(weighted[i] / weight + static_cast<double>(taken * (r + 1))).epsilon(1e-6));
}

TEST_CASE("DiLoCo's rounds take an outer Nesterov step from the last round's parameters towards the average",
          "[atom][mpi]") {
  Communicator& peers = world();
  const int W = peers.size(), r = peers.rank();
  const int64_t P = 3;
  const double lr = 0.7, mu = 0.9;
  ParameterAverager averager(peers, P, 1, 0, OuterStep{.diloco = true, .lr = lr, .momentum = mu});
  std::vector<float> params = {1.0f, -2.0f, 0.5f};  // the same start on every peer
  averager.begin(params.data());
  std::vector<double> global(params.begin(), params.end()), momentum(P, 0.0);
  for (int round = 0; round < 3; ++round) {
    // each peer moves by (rank + 1) * (round + 1) and trains on one token: the average moved by the mean of those
    for (float& p : params) p += static_cast<float>((r + 1) * (round + 1));
    const AveragingStats s = averager.after_update(params.data(), 1.0);
    CHECK(s.applied);
    double mean_move = 0;
    for (int q = 0; q < W; ++q) mean_move += static_cast<double>((q + 1) * (round + 1)) / W;
    for (int64_t i = 0; i < P; ++i) {
      const double d = -mean_move;  // global - average
      momentum[i] = mu * momentum[i] + d;
      global[i] -= lr * (d + mu * momentum[i]);
      CHECK(params[i] == Approx(global[i]).epsilon(1e-6));  // applied at once: the peer's parameters are global
    }
  }
  // lr 1 and no momentum: the plain average
  ParameterAverager plain(peers, P, 1, 0, OuterStep{.diloco = true, .lr = 1.0, .momentum = 0.0});
  std::vector<float> x = {0.0f, 1.0f, 2.0f};
  plain.begin(x.data());
  for (float& v : x) v += static_cast<float>(r);
  plain.after_update(x.data(), 1.0);
  for (int64_t i = 0; i < P; ++i) CHECK(x[i] == Approx(static_cast<double>(i) + (W - 1) / 2.0).epsilon(1e-6));
}

TEST_CASE("synchronize makes parameters and moments the peers' mean, once: a second call with no step between sends "
          "nothing", "[atom][mpi]") {
  Communicator& peers = world();
  const int W = peers.size(), r = peers.rank();
  const int64_t P = 4;
  ParameterAverager averager(peers, P, 3, 1);
  std::vector<float> params(P, static_cast<float>(r)), m(P, static_cast<float>(2 * r)), v(P, static_cast<float>(r));
  averager.after_update(params.data(), 1);
  const double mean = (W - 1) / 2.0;  // of 0 .. W - 1
  averager.synchronize(params.data(), m.data(), v.data());
  for (int64_t i = 0; i < P; ++i) {
    CHECK(params[i] == Approx(mean));
    CHECK(m[i] == Approx(2 * mean));
    CHECK(v[i] == Approx(mean));
  }
  const int64_t sent = peers.counters().total_bytes();
  averager.synchronize(params.data(), m.data(), v.data());  // as at the end of a run right after its checkpoint
  CHECK(peers.counters().total_bytes() == sent);
  params.assign(P, static_cast<float>(r));  // a step since: synchronizes again
  averager.after_update(params.data(), 1);
  averager.synchronize(params.data(), m.data(), v.data());
  CHECK(peers.counters().total_bytes() > sent);
  CHECK(params[0] == Approx(mean));
}
