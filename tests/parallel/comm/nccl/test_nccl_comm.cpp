// The NCCL communicator on device buffers, every result compared exactly with the MPI communicator's on the same
// host data (integer-valued floats, so the sums are exact whatever order NCCL adds in). Runs under mpirun with 1, 2
// and 4 ranks, one device per rank (node-local rank modulo the device count). Without a usable CUDA device every
// rank prints why and exits 77, which ctest reports as skipped.
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "kernels/common/error.h"
#include "parallel/comm/communicator.h"
#include "parallel/comm/nccl.h"
#include "support/cuda_mpi_main.h"
#include "support/device_vector.h"

using namespace trident;
using trident::test::DeviceVector;
using Catch::Matchers::Contains;

namespace {

Communicator* g_nccl = nullptr;  // the NCCL world, made in main
int g_device = -1;

// Host data for rank `rank`: small integers (exact in any summation order), different per rank.
template <class T>
std::vector<T> pattern(int64_t count, int rank) {
  std::vector<T> v(static_cast<std::size_t>(count));
  for (int64_t i = 0; i < count; ++i) v[i] = static_cast<T>((i * 7 + rank * 13) % 101 - 50);
  return v;
}

std::vector<int> same_parity(int rank, int size) {
  std::vector<int> ranks;
  for (int r = rank % 2; r < size; r += 2) ranks.push_back(r);
  return ranks;
}

}  // namespace

TEST_CASE("nccl allreduce and iallreduce equal MPI's in every type", "[nccl]") {
  Communicator& mpi = world();
  Communicator& nccl = *g_nccl;
  const int me = mpi.rank();
  auto check_type = [&](auto zero, CommType type) {
    using T = decltype(zero);
    for (int64_t count : {int64_t{1}, int64_t{1000}, int64_t{1} << 20}) {
      std::vector<T> host = pattern<T>(count, me);
      DeviceVector<T> device(host);
      mpi.allreduce_sum(host.data(), count, type);
      nccl.allreduce_sum(device.data(), count, type);
      CHECK(device.to_host() == host);
      nccl.iallreduce_sum(device.data(), count, type)->wait();
      mpi.allreduce_sum(host.data(), count, type);
      CHECK(device.to_host() == host);
    }
  };
  check_type(float{}, CommType::f32);
  check_type(double{}, CommType::f64);
  check_type(int32_t{}, CommType::i32);
  check_type(int64_t{}, CommType::i64);

  // bf16: NCCL sums it (MPI cannot); small integers, so every partial sum is exact in bf16
  std::vector<float> wide = pattern<float>(1000, me);
  std::vector<bf16> narrow;
  for (const float x : wide) narrow.push_back(float_to_bf16(x));
  DeviceVector<bf16> narrow_device(narrow);
  mpi.allreduce_sum(wide.data(), 1000, CommType::f32);
  nccl.allreduce_sum(narrow_device.data(), 1000, CommType::bf16);
  const std::vector<bf16> summed = narrow_device.to_host();
  for (int i = 0; i < 1000; ++i) CHECK(bf16_to_float(summed[i]) == wide[i]);
}

TEST_CASE("nccl ireduce_scatter of uneven blocks, empty ones included, equals MPI's", "[nccl]") {
  const int me = world().rank(), n = world().size();
  std::vector<int64_t> counts(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) counts[static_cast<std::size_t>(r)] = n == 1 ? 1000 : (r % 2) * (1000 + r);
  const int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t{0});
  const std::vector<float> in = pattern<float>(total, me);
  std::vector<float> mpi(static_cast<std::size_t>(counts[static_cast<std::size_t>(me)]), -1.0f);
  world().ireduce_scatter_sum(in.data(), mpi.data(), counts, CommType::f32)->wait();
  DeviceVector<float> device_in(in), device_out(std::vector<float>(mpi.size(), -1.0f));
  g_nccl->ireduce_scatter_sum(device_in.data(), device_out.data(), counts, CommType::f32)->wait();
  CHECK(device_out.to_host() == mpi);
}

TEST_CASE("nccl broadcast, allgather, allgatherv and iallgatherv equal MPI's", "[nccl]") {
  Communicator& mpi = world();
  Communicator& nccl = *g_nccl;
  const int n = mpi.size(), me = mpi.rank();
  for (int root = 0; root < n; ++root) {
    std::vector<float> host = pattern<float>(333, me);
    DeviceVector<float> device(host);
    mpi.broadcast(host.data(), 333, CommType::f32, root);
    nccl.broadcast(device.data(), 333, CommType::f32, root);
    CHECK(device.to_host() == host);
  }

  std::vector<double> mine = pattern<double>(17, me), all_host(17 * n);
  DeviceVector<double> mine_device(mine), all_device(std::vector<double>(17 * n, -1.0));
  mpi.allgather(mine.data(), all_host.data(), 17, CommType::f64);
  nccl.allgather(mine_device.data(), all_device.data(), 17, CommType::f64);
  CHECK(all_device.to_host() == all_host);

  // rank r contributes 2r elements (rank 0 none), gathered in reverse rank order
  std::vector<int64_t> counts(n), displs(n);
  int64_t total = 0;
  for (int r = n - 1; r >= 0; --r) {
    counts[r] = 2 * r;
    displs[r] = total;
    total += counts[r];
  }
  std::vector<int32_t> part = pattern<int32_t>(2 * me, me), gathered(total, -1);
  DeviceVector<int32_t> part_device(part), gathered_device(gathered);
  mpi.allgatherv(part.data(), 2 * me, gathered.data(), counts, displs, CommType::i32);
  nccl.allgatherv(part_device.data(), 2 * me, gathered_device.data(), counts, displs, CommType::i32);
  CHECK(gathered_device.to_host() == gathered);
  DeviceVector<int32_t> again(std::vector<int32_t>(total, -1));
  RequestPtr request = nccl.iallgatherv(part_device.data(), 2 * me, again.data(), counts, displs, CommType::i32);
  request->wait();
  CHECK(again.to_host() == gathered);
}

TEST_CASE("nccl alltoall and alltoallv equal MPI's", "[nccl]") {
  Communicator& mpi = world();
  Communicator& nccl = *g_nccl;
  const int n = mpi.size(), me = mpi.rank();
  std::vector<float> in = pattern<float>(5 * n, me), out(5 * n, -1.0f);
  DeviceVector<float> in_device(in), out_device(out);
  mpi.alltoall(in.data(), out.data(), 5, CommType::f32);
  nccl.alltoall(in_device.data(), out_device.data(), 5, CommType::f32);
  CHECK(out_device.to_host() == out);

  // rank me sends (me + r) % 3 elements to rank r, so some blocks are empty
  std::vector<int64_t> send_counts(n), send_displs(n), recv_counts(n), recv_displs(n);
  for (int r = 0; r < n; ++r) {
    send_counts[r] = (me + r) % 3;
    recv_counts[r] = (r + me) % 3;
  }
  std::exclusive_scan(send_counts.begin(), send_counts.end(), send_displs.begin(), int64_t{0});
  std::exclusive_scan(recv_counts.begin(), recv_counts.end(), recv_displs.begin(), int64_t{0});
  const int64_t sent = std::reduce(send_counts.begin(), send_counts.end());
  const int64_t received = std::reduce(recv_counts.begin(), recv_counts.end());
  std::vector<int64_t> send = pattern<int64_t>(sent, me), receive(received, -1);
  DeviceVector<int64_t> send_device(send), receive_device(receive);
  mpi.alltoallv(send.data(), send_counts, send_displs, receive.data(), recv_counts, recv_displs, CommType::i64);
  nccl.alltoallv(send_device.data(), send_counts, send_displs, receive_device.data(), recv_counts, recv_displs,
                 CommType::i64);
  CHECK(receive_device.to_host() == receive);

  // bf16 (sequence parallelism's messages) moves bit for bit, like MPI's
  std::vector<bf16> send16, receive16(received, float_to_bf16(-1.0f));
  for (const int64_t x : send) send16.push_back(float_to_bf16(float(x)));
  DeviceVector<bf16> send16_device(send16), receive16_device(receive16);
  mpi.alltoallv(send16.data(), send_counts, send_displs, receive16.data(), recv_counts, recv_displs, CommType::bf16);
  nccl.alltoallv(send16_device.data(), send_counts, send_displs, receive16_device.data(), recv_counts, recv_displs,
                 CommType::bf16);
  const std::vector<bf16> got16 = receive16_device.to_host();
  for (int64_t i = 0; i < received; ++i) CHECK(got16[i].bits == receive16[i].bits);
}

TEST_CASE("nccl point to point: pairs, rings with isendrecv, requests", "[nccl]") {
  Communicator& nccl = *g_nccl;
  const int n = nccl.size(), me = nccl.rank();
  for (Communicator* group : {&nccl, nccl.split(me % 2, me)}) {
    const int gn = group->size(), gme = group->rank(), next = (gme + 1) % gn, prev = (gme + gn - 1) % gn;
    std::vector<float> mine(64, static_cast<float>(me));
    DeviceVector<float> mine_device(mine), got_device(std::vector<float>(64, -1.0f));
    RequestPtr step = group->isendrecv(mine_device.data(), 64, next, got_device.data(), 64, prev, CommType::f32, 0);
    while (!step->test()) {
    }
    CHECK(got_device.to_host() == std::vector<float>(64, static_cast<float>(group->members()[prev])));
  }
  if (n > 1 && !(n % 2 == 1 && me == n - 1)) {  // pairs (0,1), (2,3), ...: even ranks send first
    const int partner = me ^ 1;
    std::vector<int32_t> mine(10, me);
    DeviceVector<int32_t> mine_device(mine), got_device(std::vector<int32_t>(10, -1));
    if (me % 2 == 0) nccl.send(mine_device.data(), 10, CommType::i32, partner, 0);
    nccl.recv(got_device.data(), 10, CommType::i32, partner, 0);
    if (me % 2 == 1) nccl.send(mine_device.data(), 10, CommType::i32, partner, 0);
    CHECK(got_device.to_host() == std::vector<int32_t>(10, partner));
  }
  nccl.barrier();
}

TEST_CASE("nccl groups: subgroups and splits are cached, node_group holds this node's ranks", "[nccl]") {
  Communicator& nccl = *g_nccl;
  const int n = nccl.size(), me = nccl.rank();
  const std::vector<int> half = same_parity(me, n);
  Communicator* group = nccl.subgroup(half);
  CHECK(group == nccl.subgroup(half));
  CHECK(group->members() == half);
  std::vector<float> host(8, 1.0f);
  DeviceVector<float> device(host);
  group->allreduce_sum(device.data(), 8, CommType::f32);
  CHECK(device.to_host() == std::vector<float>(8, static_cast<float>(half.size())));

  CHECK(nccl.split(0, -me)->members().front() == n - 1);  // key -me reverses the order
  Communicator* odd = nccl.split(me % 2 == 0 ? -1 : 1, me);  // every rank calls split, even without a colour
  CHECK(odd == nccl.split(me % 2 == 0 ? -1 : 1, me));
  CHECK((odd == nullptr) == (me % 2 == 0));
  CHECK(nccl.node_group()->members() == world().node_group()->members());
}

TEST_CASE("nccl counters match MPI's definitions; host pointers and bad peers are clear errors", "[nccl]") {
  Communicator& nccl = *g_nccl;
  const int n = nccl.size(), me = nccl.rank();
  nccl.reset_counters();
  DeviceVector<float> device(4 * n, 0.0f), out(4 * n, 0.0f);
  nccl.allreduce_sum(device.data(), 10, CommType::f32);
  nccl.broadcast(device.data(), 3, CommType::f32, 0);
  nccl.alltoall(device.data(), out.data(), 4, CommType::f32);
  nccl.barrier();
  const auto& ops = nccl.counters().ops;
  CHECK(ops.at("allreduce").bytes == 40);
  CHECK(ops.at("broadcast").bytes == (me == 0 ? 12 : 0));
  CHECK(ops.at("alltoall").bytes == 16 * n);
  CHECK(ops.at("barrier").calls == 1);
  CHECK(nccl.counters().total_calls() == 4);

  std::vector<float> host(4);
  CHECK_THROWS_WITH(nccl.allreduce_sum(host.data(), 4, CommType::f32),
                    Contains("nccl allreduce failed on rank") && Contains("is host memory"));
  CHECK_THROWS_WITH(nccl.send(device.data(), 1, CommType::f32, n, 0), Contains("peer") && Contains("is not a rank"));
  nccl.barrier();
}

int main(int argc, char** argv) {
  return trident::test::cuda_mpi_main(argc, argv, [](trident::test::CatchSession& session, int device,
                                                      bool one_rank_a_device) {
    if (!one_rank_a_device) return trident::test::skip_without_a_device_a_rank();
    g_device = device;
    // The tests fill and read buffers with blocking copies: nothing to wait for on a compute stream.
    std::unique_ptr<Communicator> nccl = make_nccl_communicator(world(), device, nullptr);
    g_nccl = nccl.get();
    const int result = session.run();
    g_nccl = nullptr;
    return result;  // NCCL goes before MPI is finalised and before the CUDA runtime tears down
  });
}
