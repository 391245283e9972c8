// The staged communicator (device.comm: host) over the CPU backend: every operation gives exactly what the MPI
// communicator gives on the same data, the parts of an output it must not write keep their values, and a result
// reaches the caller's buffer only through the backend's upload (the staging copies are the communicator's own, so a
// missing upload leaves the buffer as it was and fails here). [mpi]: 1 rank, and 2, 3 and 4 under mpirun.
#include <cstdint>
#include <functional>
#include <memory>
#include <numeric>
#include <vector>

#include <catch2/catch.hpp>

#include "kernels/backend.h"
#include "kernels/common/error.h"
#include "parallel/comm/staged.h"

using namespace trident;
using Catch::Matchers::Contains;

namespace {

Communicator& staged_world() {
  static std::unique_ptr<Communicator> staged = make_staged_communicator(world(), cpu_backend());
  return *staged;
}

// `op` run on MPI and on the staged communicator, each from the same `start`: the buffers it leaves must be equal.
template <class T>
void same_as_mpi(const std::vector<T>& start, const std::function<void(Communicator&, std::vector<T>&)>& op) {
  std::vector<T> mpi = start, staged = start;
  op(world(), mpi);
  op(staged_world(), staged);
  CHECK(staged == mpi);
}

std::vector<float> ramp(int64_t n, int rank) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(i % 13 + 100 * rank);
  return v;
}

}  // namespace

TEST_CASE("staged: allreduce, iallreduce and broadcast equal MPI's", "[comm][mpi][staged]") {
  const int me = world().rank(), n = world().size();
  same_as_mpi<float>(ramp(1001, me), [](Communicator& c, std::vector<float>& v) {
    c.allreduce_sum(v.data(), 1001, CommType::f32);
  });
  same_as_mpi<float>(ramp(517, me), [](Communicator& c, std::vector<float>& v) {
    RequestPtr r = c.iallreduce_sum(v.data(), 517, CommType::f32);
    r->wait();
  });
  same_as_mpi<float>(ramp(300, me), [](Communicator& c, std::vector<float>& v) {
    RequestPtr r = c.iallreduce_sum(v.data(), 300, CommType::f32);
    while (!r->test()) {
    }
  });
  for (int root = 0; root < n; ++root)
    same_as_mpi<float>(ramp(77, me), [root](Communicator& c, std::vector<float>& v) {
      c.broadcast(v.data(), 77, CommType::f32, root);
    });
  {  // reduce-scatter: uneven blocks, rank 0's empty on more than one rank
    std::vector<int64_t> counts(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) counts[static_cast<std::size_t>(r)] = n == 1 ? 5 : r * 3;
    const int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t{0});
    const std::vector<float> in = ramp(total, me);
    std::vector<float> mpi(static_cast<std::size_t>(counts[static_cast<std::size_t>(me)]), -1.0f), staged = mpi;
    world().ireduce_scatter_sum(in.data(), mpi.data(), counts, CommType::f32)->wait();
    staged_world().ireduce_scatter_sum(in.data(), staged.data(), counts, CommType::f32)->wait();
    CHECK(staged == mpi);
  }
  // A request destroyed before it is waited for still delivers (it waits in its destructor).
  std::vector<float> v = ramp(64, me), want = v;
  world().allreduce_sum(want.data(), 64, CommType::f32);
  { RequestPtr r = staged_world().iallreduce_sum(v.data(), 64, CommType::f32); }
  CHECK(v == want);
}

TEST_CASE("staged: gathers and all-to-alls equal MPI's, gaps in the output untouched", "[comm][mpi][staged]") {
  const int me = world().rank(), n = world().size();
  const int64_t count = 5;
  same_as_mpi<float>(ramp(count * n, me), [&](Communicator& c, std::vector<float>& out) {
    const std::vector<float> in = ramp(count, me + 7);
    c.allgather(in.data(), out.data(), count, CommType::f32);
  });
  same_as_mpi<float>(ramp(count * n, me), [&](Communicator& c, std::vector<float>& out) {
    const std::vector<float> in = ramp(count * n, me + 3);
    c.alltoall(in.data(), out.data(), count, CommType::f32);
  });
  // rank r contributes r + 1 elements, placed with a gap of 2 before each block
  std::vector<int64_t> counts, displs;
  int64_t end = 0;
  for (int r = 0; r < n; ++r) {
    counts.push_back(r + 1);
    displs.push_back(end + 2);
    end += 2 + r + 1;
  }
  const std::vector<float> sentinel(static_cast<std::size_t>(end), -7.0f);
  same_as_mpi<float>(sentinel, [&](Communicator& c, std::vector<float>& out) {
    const std::vector<float> in = ramp(me + 1, me + 11);
    c.allgatherv(in.data(), me + 1, out.data(), counts, displs, CommType::f32);
  });
  // alltoallv: to rank r, (me + r) % 3 elements; from rank r, (r + me) % 3 elements, every block after a gap of 1
  std::vector<int64_t> sc, sd, rc, rd;
  int64_t send_end = 0, recv_end = 0;
  for (int r = 0; r < n; ++r) {
    sc.push_back((me + r) % 3);
    sd.push_back(send_end + 1);
    send_end += 1 + sc.back();
    rc.push_back((r + me) % 3);
    rd.push_back(recv_end + 1);
    recv_end += 1 + rc.back();
  }
  same_as_mpi<float>(std::vector<float>(static_cast<std::size_t>(recv_end), -3.0f),
                     [&](Communicator& c, std::vector<float>& out) {
                       const std::vector<float> in = ramp(send_end, me + 5);
                       c.alltoallv(in.data(), sc, sd, out.data(), rc, rd, CommType::f32);
                     });
  std::vector<float> out(sentinel.size(), -7.0f);
  const std::vector<float> in = ramp(me + 1, me);
  staged_world().allgatherv(in.data(), me + 1, out.data(), counts, displs, CommType::f32);
  for (int r = 0; r < n; ++r) CHECK(out[static_cast<std::size_t>(displs[r] - 1)] == -7.0f);
}

TEST_CASE("staged: point to point around a ring equals MPI's", "[comm][mpi][staged]") {
  const int me = world().rank(), n = world().size();
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  same_as_mpi<float>(std::vector<float>(33, 0.0f), [&](Communicator& c, std::vector<float>& got) {
    const std::vector<float> mine = ramp(33, me);
    RequestPtr r = c.isendrecv(mine.data(), 33, next, got.data(), 33, prev, CommType::f32, 4);
    r->wait();
  });
  same_as_mpi<float>(std::vector<float>(9, 0.0f), [&](Communicator& c, std::vector<float>& got) {
    const std::vector<float> mine = ramp(9, me + 1);
    RequestPtr recv = c.irecv(got.data(), 9, CommType::f32, prev, 5);
    RequestPtr send = c.isend(mine.data(), 9, CommType::f32, next, 5);
    send->wait();
    recv->wait();
  });
  if (n > 1) {  // blocking pairs: even ranks send first, odd ranks receive first
    same_as_mpi<float>(std::vector<float>(12, 0.0f), [&](Communicator& c, std::vector<float>& got) {
      const std::vector<float> mine = ramp(12, me + 2);
      if (me % 2 == 0) {
        if (me + 1 < n) c.send(mine.data(), 12, CommType::f32, me + 1, 6);
        if (me > 0) c.recv(got.data(), 12, CommType::f32, me - 1, 6);
      } else {
        c.recv(got.data(), 12, CommType::f32, me - 1, 6);
        if (me + 1 < n) c.send(mine.data(), 12, CommType::f32, me + 1, 6);
      }
    });
  }
  staged_world().barrier();
}

TEST_CASE("staged: sub-communicators, counters and MPI's refusals", "[comm][mpi][staged]") {
  const int me = world().rank(), n = world().size();
  std::vector<int> parity;
  for (int r = me % 2; r < n; r += 2) parity.push_back(r);
  Communicator* sub = staged_world().subgroup(parity);
  REQUIRE(sub != nullptr);
  CHECK(sub == staged_world().subgroup(parity));  // cached
  CHECK(sub->members() == world().subgroup(parity)->members());
  std::vector<float> v = ramp(20, me), want = v;
  sub->allreduce_sum(v.data(), 20, CommType::f32);
  world().subgroup(parity)->allreduce_sum(want.data(), 20, CommType::f32);
  CHECK(v == want);
  Communicator* split = staged_world().split(me % 2 == 0 ? 0 : -1, me);
  CHECK((split != nullptr) == (me % 2 == 0));
  CHECK(staged_world().node_group()->size() == world().node_group()->size());

  staged_world().reset_counters();
  std::vector<float> w(10, 1.0f);
  staged_world().allreduce_sum(w.data(), 10, CommType::f32);
  CHECK(staged_world().counters().ops.at("allreduce").calls == 1);
  CHECK(staged_world().counters().ops.at("allreduce").bytes == 40);

  std::vector<bf16> half(4);
  CHECK_THROWS_WITH(staged_world().allreduce_sum(half.data(), 4, CommType::bf16), Contains("bf16"));
}
