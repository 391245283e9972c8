#include "parallel/comm/run_groups.h"

#include <algorithm>

#include "kernels/common/error.h"
#include "parallel/comm/node_layout.h"

namespace trident {

RunGroups::RunGroups(Communicator& world, const DeviceCommFactory& device_comm, const std::vector<int>& degrees)
    : world_(world) {
  if (device_comm) device_world_ = device_comm(world);
  const NodeLayout layout = node_layout(world);
  nodes_ = layout.nodes;
  ranks_per_node_ = layout.ranks_on(0);
  for (int n = 1; n < layout.nodes; ++n)
    if (layout.ranks_on(n) != ranks_per_node_) ranks_per_node_ = 0;
  const std::vector<int> order = layout.node_major();
  const int position = static_cast<int>(std::find(order.begin(), order.end(), world.rank()) - order.begin());
  position_ = position;
  std::vector<int> sorted = degrees;
  sorted.push_back(1);  // every run has data parallelism (a group of one: a 1-rank layout of any method runs on it)
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  for (int d : sorted) {  // the same order on every rank: the splits are collective
    TRIDENT_CHECK(d >= 1 && world.size() % d == 0, "group size {} does not divide the {} ranks", d, world.size());
    RankGroup g;
    g.replica = position / d;
    g.replicas = world.size() / d;
    g.host = world.split(g.replica, position);
    g.device = g.host;
    if (device_comm) {
      device_groups_.push_back(device_comm(*g.host));
      if (device_groups_.back()) g.device = device_groups_.back().get();
    }
    groups_[d] = g;
  }
}

RunGroups::~RunGroups() = default;

const RunGroups::RankGroup& RunGroups::group(int degree) const {
  const auto it = groups_.find(degree);
  TRIDENT_CHECK(it != groups_.end(), "no group of {} ranks was made at start-up", degree);
  return it->second;
}

std::vector<int> RunGroups::degrees() const {
  std::vector<int> out;
  for (const auto& [d, g] : groups_) out.push_back(d);
  return out;
}

int64_t RunGroups::bytes_sent() const {
  int64_t bytes = world_.counters().total_bytes();
  if (device_world_) bytes += device_world_->counters().total_bytes();
  for (const auto& [d, g] : groups_) {
    if (g.host) bytes += g.host->counters().total_bytes();
    if (g.device && g.device != g.host) bytes += g.device->counters().total_bytes();
  }
  return bytes;
}

double RunGroups::alltoall_seconds() const {
  double seconds = world_.counters().alltoall_seconds();
  for (const auto& [d, g] : groups_)
    if (g.host) seconds += g.host->counters().alltoall_seconds();  // on the CPU `device` is `host`
  return seconds;
}

}  // namespace trident
