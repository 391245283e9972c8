// ATOM's averaging round as a butterfly all-reduce (parallel/atom/butterfly.h): parts in proportion to bandwidth,
// and a sum over real MPI ranks equal, bit for bit, to the rank-order sum whatever the split.
#include <numeric>
#include <vector>

#include <catch2/catch.hpp>

#include "parallel/atom/averager.h"
#include "parallel/atom/butterfly.h"
#include "parallel/comm/communicator.h"

using namespace trident;

TEST_CASE("butterfly parts follow the peers' bandwidth and cover the vector", "[atom]") {
  CHECK(butterfly_parts({1, 1}, 10) == std::vector<int64_t>{5, 5});
  CHECK(butterfly_parts({1, 1, 1}, 10) == std::vector<int64_t>{3, 4, 3});  // cumulative rounding
  CHECK(butterfly_parts({10e9, 1e9}, 1100) == std::vector<int64_t>{1000, 100});
  CHECK(butterfly_parts({3, 1, 0}, 8) == std::vector<int64_t>{6, 2, 0});  // a peer measured at 0 sums nothing
  CHECK(butterfly_parts({0, 0}, 7) == std::vector<int64_t>{4, 3});         // nothing measured: even
  CHECK(butterfly_parts({1, 2}, 0) == std::vector<int64_t>{0, 0});
  const std::vector<int64_t> parts = butterfly_parts({1.3, 0.2, 7.1, 2.9}, 1'000'003);
  CHECK(std::reduce(parts.begin(), parts.end()) == 1'000'003);
}

TEST_CASE("a butterfly sum equals the rank-order sum, bit for bit, on every split and in stripes", "[atom][mpi]") {
  Communicator& peers = world();
  const int W = peers.size(), r = peers.rank();
  const int64_t N = 1001;
  std::vector<std::vector<float>> values(static_cast<std::size_t>(W), std::vector<float>(N));  // every peer's data
  for (int q = 0; q < W; ++q)
    for (int64_t i = 0; i < N; ++i)
      values[q][i] = static_cast<float>(i % 997) / 10.0f + 1.0f / static_cast<float>(q + 3);  // each index its own
  std::vector<float> expected = values[0];
  for (int q = 1; q < W; ++q)
    for (int64_t i = 0; i < N; ++i) expected[i] += values[q][i];
  std::vector<double> bandwidth(static_cast<std::size_t>(W));
  const int split = GENERATE(0, 1, 2);  // even, skewed, one peer with nothing to sum
  for (int q = 0; q < W; ++q) bandwidth[q] = split == 0 ? 1.0 : split == 1 ? q + 1.0 : (q == 0 ? 0.0 : 1.0);
  // one stripe, or stripes of 400 bytes (11 of them: 100 values each, of every part its share) and of 4 bytes (the
  // most stripes: each slice of a part 0 or a few values)
  const int64_t stripe_bytes = GENERATE(as<int64_t>{}, ButterflyAllreduce::kStripeBytes + 0, 400, 4);
  CAPTURE(W, split, stripe_bytes);
  ButterflyAllreduce butterfly(peers, butterfly_parts(bandwidth, N), stripe_bytes);
  CHECK(butterfly.stripes() == (4 * N + stripe_bytes - 1) / stripe_bytes);
  std::vector<float> data = values[static_cast<std::size_t>(r)];
  butterfly.sum(data.data());
  CHECK(data == expected);
  const int64_t mine = butterfly.parts()[static_cast<std::size_t>(r)];
  CHECK(butterfly.bytes_sent() == 4 * (N - mine + (W - 1) * mine));
}

TEST_CASE("peers measure their bandwidth: one node has no network to measure", "[atom][mpi]") {
  Communicator& peers = world();
  // Every rank of this test shares one machine: the split stays even, and measuring is still collective.
  CHECK(measure_peer_bandwidth(peers, 1 << 16).empty());
}

TEST_CASE("an averager's rounds on the averaging thread are butterflies over every peer", "[atom][mpi]") {
  Communicator& peers = world();
  if (peers.size() == 1) return;
  REQUIRE(mpi_thread_multiple());  // asked for at start-up; Open MPI grants it
  ParameterAverager averager(peers, 10, 1, 0, {}, 0, /*split_by_bandwidth=*/true);
  REQUIRE(averager.butterfly() != nullptr);
  CHECK(averager.bandwidth().empty());  // one node
  const std::vector<int64_t>& parts = averager.butterfly()->parts();
  CHECK(std::reduce(parts.begin(), parts.end()) == 11);  // the parameters and the tokens
  std::vector<float> params(10, static_cast<float>(peers.rank()));
  const AveragingStats stats = averager.after_update(params.data(), 1.0);
  CHECK(stats.applied);
  CHECK(stats.thread_bytes == averager.butterfly()->bytes_sent());
  for (float p : params) CHECK(p == Approx((peers.size() - 1) / 2.0));
}
