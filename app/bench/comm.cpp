// trident bench comm: latency and bandwidth of the communicator per group size, reported as nccl-tests does — time
// per call, algorithm bandwidth (bytes / time) and bus bandwidth (algorithm bandwidth times the collective's factor,
// which makes numbers comparable across group sizes). Runs under mpirun; rank 0 prints.
#include <algorithm>
#include <chrono>
#include <vector>

#include <fmt/core.h>

#include "app/bench/bench.h"
#include "app/bench/report.h"
#include "parallel/comm/communicator.h"

namespace trident::bench {

namespace {

// One operation to measure: how a message of `bytes` maps to its arguments, its bus bandwidth factor, the call.
struct Collective {
  const char* name;
  const char* what;  // for the title: what the call does and what `bytes` counts
  // The message is size() blocks of `count` elements (allgather's result, alltoall's send buffer), as nccl-tests
  // sizes them; otherwise it is `count` elements.
  bool blocks;
  int messages;  // back-to-back transfers in one call (ping-pong: 2); time per call is per transfer
  double (*bus_factor)(int n);
  void (*call)(Communicator& group, float* in, float* out, int64_t count);
};

const Collective kCollectives[] = {
    {"sendrecv", "ping-pong between group ranks 0 and 1, time one way", false, 2, [](int) { return 1.0; },
     [](Communicator& g, float* in, float* out, int64_t count) {
       if (g.rank() == 0) {
         g.send(in, count, CommType::f32, 1, 0);
         g.recv(out, count, CommType::f32, 1, 0);
       } else if (g.rank() == 1) {
         g.recv(out, count, CommType::f32, 0, 0);
         g.send(in, count, CommType::f32, 0, 0);
       }
     }},
    {"allreduce", "in-place f32 sum", false, 1, [](int n) { return 2.0 * (n - 1) / n; },
     [](Communicator& g, float*, float* out, int64_t count) { g.allreduce_sum(out, count, CommType::f32); }},
    {"allgather", "bytes: the gathered result", true, 1, [](int n) { return (n - 1.0) / n; },
     [](Communicator& g, float* in, float* out, int64_t count) { g.allgather(in, out, count, CommType::f32); }},
    {"alltoall", "bytes: each rank's send buffer", true, 1, [](int n) { return (n - 1.0) / n; },
     [](Communicator& g, float* in, float* out, int64_t count) { g.alltoall(in, out, count, CommType::f32); }},
};

constexpr int64_t kMinBytes = 4, kMaxBytes = int64_t{64} << 20;

// 2, 4, 8, ... below the world size, then the world size itself.
std::vector<int> group_sizes(int world_size) {
  std::vector<int> sizes;
  for (int g = 2; g < world_size; g *= 2) sizes.push_back(g);
  sizes.push_back(world_size);
  return sizes;
}

// Timed calls per point: 20, falling to 2 at 64 MiB, so a whole sweep takes seconds.
int iterations(int64_t bytes) { return static_cast<int>(std::clamp<int64_t>((int64_t{128} << 20) / bytes, 2, 20)); }

// Seconds per transfer of `op` on this rank (0 outside a group): one warm-up call, then timed calls started
// together by a barrier.
double seconds_per_transfer(const Collective& op, Communicator* group, float* in, float* out, int64_t count,
                            int iters) {
  if (group == nullptr) return 0;
  op.call(*group, in, out, count);
  group->barrier();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) op.call(*group, in, out, count);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return seconds / iters / op.messages;
}

}  // namespace

void run_comm(const Options& options) {
  Communicator& comm = world();
  const int world_size = comm.size(), me = comm.rank();
  if (world_size < 2) {
    fmt::print("trident bench comm: nothing to measure in a 1-rank world; run it under mpirun with at least 2 "
               "ranks (e.g. mpirun -np 4 trident bench comm)\n");
    return;
  }
  std::vector<float> in(kMaxBytes / 4, 1.0f), out(kMaxBytes / 4, 0.0f);  // allreduce sums zeros: no overflow
  std::vector<double> seconds(world_size);
  for (const Collective& op : kCollectives) {
    Report report(fmt::format("{} ({}): MPI, groups of consecutive ranks out of {}", op.name, op.what, world_size),
                  options.json);
    for (int n : group_sizes(world_size)) {
      // every full group of n consecutive ranks measures at once; the ranks left over sit out
      Communicator* group = comm.split(me < world_size / n * n ? me / n : -1, me);
      for (int64_t bytes = kMinBytes; bytes <= kMaxBytes; bytes *= 4) {
        const int64_t count = op.blocks ? bytes / 4 / n : bytes / 4;
        if (count == 0) continue;  // too small to give each rank one element
        const double mine = seconds_per_transfer(op, group, in.data(), out.data(), count, iterations(bytes));
        comm.allgather(&mine, seconds.data(), 1, CommType::f64);
        const double slowest = *std::max_element(seconds.begin(), seconds.end());
        const int64_t moved = (op.blocks ? n : 1) * count * 4;
        const double algbw = static_cast<double>(moved) / slowest / 1e9;
        report.add({{{"ranks", fmt::format("{}", n)}, {"bytes", fmt::format("{}", moved)}},
                    {{"us/call", slowest * 1e6}, {"algbw GB/s", algbw}, {"busbw GB/s", algbw * op.bus_factor(n)}}});
      }
    }
    if (me == 0) report.print();
  }
}

}  // namespace trident::bench
