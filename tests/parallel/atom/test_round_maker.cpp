// Averaging rounds of the peers ready within a deadline (parallel/atom/round_maker.h), over real MPI ranks: peers
// ready together sum their data in one round; a peer that reports late is left out of it and runs its own round
// (alone, its data untouched).
#include <chrono>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "parallel/atom/round_maker.h"
#include "parallel/comm/communicator.h"

using namespace trident;

TEST_CASE("a round takes the peers ready within its deadline", "[atom][mpi]") {
  Communicator& peers = world();
  REQUIRE(mpi_thread_multiple());  // asked for at start-up; Open MPI grants it
  const int W = peers.size(), r = peers.rank();
  Communicator& own = *peers.split(0, r);
  {
    // everyone ready at once, a generous deadline: one round of every peer
    RoundMaker rounds(own, 30.0);
    std::vector<float> data = {static_cast<float>(r + 1), 1.0f};
    rounds.submit(data.data(), 2);
    CHECK(rounds.wait() == W);
    CHECK(data[0] == static_cast<float>(W * (W + 1) / 2));
    CHECK(data[1] == static_cast<float>(W));
  }  // closes: every peer's thread stops
  {
    // the last peer reports 1.5 s after the others; the deadline is 0.3 s
    RoundMaker rounds(own, 0.3);
    const bool late = W > 1 && r == W - 1;
    if (late) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    std::vector<float> data = {static_cast<float>(r + 1)};
    rounds.submit(data.data(), 1);
    const int members = rounds.wait();
    if (late) {
      CHECK(members == 1);  // alone: nothing summed
      CHECK(data[0] == static_cast<float>(r + 1));
    } else {
      CHECK(members == (W > 1 ? W - 1 : 1));
      const int k = W > 1 ? W - 1 : 1;  // the peers on time: ranks 0 .. k - 1, data 1 .. k
      CHECK(data[0] == static_cast<float>(k * (k + 1) / 2));
    }
  }
}
