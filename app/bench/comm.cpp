// trident bench comm: latency and bandwidth of the communicator per group size and placement, reported as
// nccl-tests does — time per call, algorithm bandwidth (bytes / time) and bus bandwidth (algorithm bandwidth times
// the collective's factor, which makes numbers comparable across group sizes). Groups either lie on one node (shared
// memory) or span nodes (the network), as node_layout() finds them. Runs under mpirun; rank 0 prints, and with
// --profile writes the cluster profile's `network` section from the same numbers.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string_view>
#include <vector>

#include <fmt/core.h>

#include "app/bench/bench.h"
#include "core/metrics/bench_report.h"
#include "kernels/common/error.h"
#include "parallel/comm/communicator.h"
#include "parallel/comm/node_layout.h"
#include "parallel/cost/profile.h"

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

constexpr int64_t kMinBytes = 4;

// 2, 4, 8, ... below the world size, then the world size itself.
std::vector<int> group_sizes(int world_size) {
  std::vector<int> sizes;
  for (int g = 2; g < world_size; g *= 2) sizes.push_back(g);
  sizes.push_back(world_size);
  return sizes;
}

// Timed calls per point: 20, falling to 2 at 64 MiB, so a whole sweep takes seconds on a fast network; on a slow
// link also no more than fit in `seconds` after the warm-up call.
int iterations(int64_t bytes, double warmup_seconds, double seconds) {
  const auto by_size = std::clamp<int64_t>((int64_t{128} << 20) / bytes, 2, 20);
  const auto by_time = static_cast<int64_t>(seconds / std::max(warmup_seconds, 1e-9));
  return static_cast<int>(std::clamp<int64_t>(by_time, 2, by_size));
}

double elapsed(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The slowest rank's value (ranks outside every group pass 0).
double slowest(Communicator& comm, double mine) {
  std::vector<double> all(comm.size());
  comm.allgather(&mine, all.data(), 1, CommType::f64);
  return *std::max_element(all.begin(), all.end());
}

// One measured point, kept for the profile.
struct Point {
  const char* op;
  int ranks, nodes;  // group size, nodes each group spans
  int64_t bytes;
  double seconds, busbw;
};

// The groups of one row: disjoint, all measuring at once, each spanning `nodes` nodes.
struct Placement {
  std::vector<std::vector<int>> groups;
  int nodes;
};

std::vector<Placement> placements(const NodeLayout& layout, int n) {
  std::vector<Placement> out;
  if (auto within = layout.groups_within_nodes(n); !within.empty()) out.push_back({within, 1});
  if (layout.nodes > 1) {
    auto across = layout.groups_across_nodes(n);
    if (!across.empty() && layout.nodes_spanned(across.front()) > 1)
      out.push_back({across, layout.nodes_spanned(across.front())});
  }
  return out;
}

// Bandwidth at the largest message, latency (time per call) at the smallest, of one op, size and placement.
cost::Link measure_of(const std::vector<Point>& points, const char* op, int ranks, int nodes) {
  const Point *small = nullptr, *large = nullptr;
  for (const Point& p : points) {
    if (std::string_view(p.op) != op || p.ranks != ranks || p.nodes != nodes) continue;
    if (!small || p.bytes < small->bytes) small = &p;
    if (!large || p.bytes > large->bytes) large = &p;
  }
  if (!small) return {};
  return {large->busbw, small->seconds * 1e6};
}

cost::NetworkSection network_of(const std::vector<Point>& points) {
  cost::NetworkSection net;
  net.intra_node = measure_of(points, "sendrecv", 2, 1);
  net.inter_node = measure_of(points, "sendrecv", 2, 2);
  for (const Point& p : points) {
    if (std::string_view(p.op) != "alltoall") continue;
    const bool seen = std::any_of(net.alltoall.begin(), net.alltoall.end(), [&](const cost::AlltoallLink& a) {
      return a.group_size == p.ranks && a.nodes == p.nodes;
    });
    if (!seen) net.alltoall.push_back({p.ranks, p.nodes, measure_of(points, "alltoall", p.ranks, p.nodes)});
  }
  return net;
}

}  // namespace

void run_comm(const Options& options, const CommOptions& comm_options) {
  Communicator& comm = world();
  const int world_size = comm.size(), me = comm.rank();
  if (world_size < 2) {
    if (!comm_options.profile.empty())
      throw_config_error("bench comm --profile: a 1-rank world measures no link; run it under mpirun with ranks on "
                         "at least two nodes (e.g. scripts/cluster/emucluster.sh run -- trident bench comm --profile "
                         "FILE)");
    fmt::print("trident bench comm: nothing to measure in a 1-rank world; run it under mpirun with at least 2 "
               "ranks (e.g. mpirun -np 4 trident bench comm)\n");
    return;
  }
  const NodeLayout layout = node_layout(comm);
  if (!comm_options.profile.empty()) {
    // Before the measurement, so a bad request fails at once.
    if (layout.groups_within_nodes(2).empty() || layout.nodes < 2)
      throw_config_error("bench comm --profile: the profile needs a pair of ranks on one node and a pair on two "
                         "nodes, but the {} ranks run on {} node(s), {} on the first; run at least 2 ranks on each "
                         "of 2 nodes (e.g. scripts/cluster/emucluster.sh up --nodes 2 --ranks-per-node 2 ...)",
                         world_size, layout.nodes, layout.ranks_on(0));
    cost::check_profile_target(comm_options.profile);
  }
  const int64_t max_bytes = comm_options.max_bytes;
  std::vector<float> in(static_cast<std::size_t>(max_bytes / 4), 1.0f);
  std::vector<float> out(in.size(), 0.0f);  // allreduce sums zeros: no overflow
  std::vector<Point> points;
  for (const Collective& op : kCollectives) {
    Report report(fmt::format("{} ({}): MPI, {} ranks on {} node(s); groups on one node or across nodes, all "
                              "groups of a row at once",
                              op.name, op.what, world_size, layout.nodes),
                  options.json);
    for (int n : group_sizes(world_size)) {
      if (me == 0) fmt::print(stderr, "bench comm: {} in groups of {} rank(s)\n", op.name, n);
      for (const Placement& place : placements(layout, n)) {
        int color = -1, key = 0;
        for (std::size_t g = 0; g < place.groups.size(); ++g)
          if (auto it = std::find(place.groups[g].begin(), place.groups[g].end(), me); it != place.groups[g].end())
            color = static_cast<int>(g), key = static_cast<int>(it - place.groups[g].begin());
        Communicator* group = comm.split(color, key);  // ranks in no group sit out
        for (int64_t bytes = kMinBytes; bytes <= max_bytes; bytes *= 4) {
          const int64_t count = op.blocks ? bytes / 4 / n : bytes / 4;
          if (count == 0) continue;  // too small to give each rank one element
          // One warm-up call, then timed calls started together by a barrier; the slowest rank counts.
          auto start = std::chrono::steady_clock::now();
          if (group) op.call(*group, in.data(), out.data(), count);
          const int iters = iterations(bytes, slowest(comm, group ? elapsed(start) : 0), options.min_seconds);
          double mine = 0;
          if (group) {
            group->barrier();
            start = std::chrono::steady_clock::now();
            for (int i = 0; i < iters; ++i) op.call(*group, in.data(), out.data(), count);
            mine = elapsed(start) / iters / op.messages;
          }
          const double seconds = slowest(comm, mine);
          const int64_t moved = (op.blocks ? n : 1) * count * 4;
          const double algbw = static_cast<double>(moved) / seconds / 1e9;
          points.push_back({op.name, n, place.nodes, moved, seconds, algbw * op.bus_factor(n)});
          report.add({{{"ranks", fmt::format("{}", n)},
                       {"nodes", fmt::format("{}", place.nodes)},
                       {"groups", fmt::format("{}", place.groups.size())},
                       {"bytes", fmt::format("{}", moved)}},
                      {{"us/call", seconds * 1e6}, {"algbw GB/s", algbw}, {"busbw GB/s", algbw * op.bus_factor(n)}}});
        }
      }
    }
    if (me == 0) report.print();
  }
  if (comm_options.profile.empty() || me != 0) return;
  cost::Profile update;
  update.network = network_of(points);
  // A new file describes this machine; an existing one keeps its cluster and other sections.
  if (!std::filesystem::exists(comm_options.profile))
    update.cluster = cost::ClusterSection{
        fmt::format("{} nodes x {} ranks, measured by trident bench comm", layout.nodes, layout.ranks_on(0)),
        layout.nodes, layout.ranks_on(0), comm_options.device_memory_gb};
  cost::merge_profile_into(comm_options.profile, update);
  fmt::print(stderr, "trident bench comm: wrote the network section of {}\n", comm_options.profile);
}

}  // namespace trident::bench
