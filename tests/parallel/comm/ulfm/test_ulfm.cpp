// Surviving a dead rank (parallel/comm/fault_tolerance.h) on the real ULFM Open MPI, 4 ranks under
// `mpirun --with-ft ulfm` (tests/CMakeLists.txt, a TRIDENT_ULFM build): rank 2 kills itself after a first sum; each
// survivor's next sum fails with PeerFailure (or, where another survivor revoked first, with the revocation), it
// revokes and shrinks, and the three sum over the shrunk communicator and agree.
#include <csignal>
#include <memory>
#include <vector>

#include <catch2/catch.hpp>

#include "parallel/comm/fault_tolerance.h"

using namespace trident;

TEST_CASE("the survivors of a dead rank notice it, revoke, shrink and go on over the three", "[ulfm]") {
  Communicator& all = world();
  REQUIRE(fault_tolerant_mpi());
  REQUIRE(all.size() == 4);
  double one = 1;
  all.allreduce_sum(&one, 1, CommType::f64);
  CHECK(one == 4);
  if (all.rank() == 2) std::raise(SIGKILL);

  std::unique_ptr<Communicator> survivors;
  int failures = 0;
  while (!survivors) {
    double rank = all.rank();
    try {
      all.allreduce_sum(&rank, 1, CommType::f64);  // cannot complete without rank 2
      FAIL("a sum over a dead rank completed");
    } catch (const PeerFailure& e) {
      ++failures;
      revoke(all);  // the survivors that have not noticed yet fail too
      survivors = shrink(all);
    }
  }
  CHECK(failures == 1);
  REQUIRE(survivors->size() == 3);
  CHECK(survivors->members() == std::vector<int>{0, 1, 3});
  double world_rank = survivors->members()[static_cast<std::size_t>(survivors->rank())];
  survivors->allreduce_sum(&world_rank, 1, CommType::f64);
  CHECK(world_rank == 0 + 1 + 3);
  bool failed = true;
  CHECK(agree(*survivors, true, &failed));
  CHECK_FALSE(failed);
  CHECK_FALSE(agree(*survivors, survivors->rank() != 1));  // one says no: no on every survivor
  // the old communicator stays revoked
  double again = 1;
  CHECK_THROWS_AS(all.allreduce_sum(&again, 1, CommType::f64), PeerFailure);
}
