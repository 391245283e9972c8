// Sub-communicators, created once per member set (subgroup), partition (split) or node (node_group) and cached by
// their parent.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kernels/common/error.h"
#include "parallel/comm/mpi_comm.h"

namespace trident {

namespace {

// MPI_Comm_create_group is collective over the new group's members only; its tag tells apart creations that are in
// flight at once over the same parent. Every member derives the same tag from the member set (FNV-1a), kept within
// the 32767 every MPI guarantees for MPI_TAG_UB.
int group_tag(const std::vector<int>& ranks) {
  uint32_t hash = 2166136261u;
  for (int r : ranks) hash = (hash ^ static_cast<uint32_t>(r)) * 16777619u;
  return static_cast<int>(hash % 32768u);
}

}  // namespace

Communicator* MpiCommunicator::subgroup(const std::vector<int>& ranks) {
  if (auto it = subgroups_.find(ranks); it != subgroups_.end()) return it->second.get();
  auto invalid = [&](const std::string& why) {
    return RuntimeError(fmt::format("subgroup {} asked for by rank {} of a {}-rank communicator: {}", ranks, rank_,
                                    size_, why));
  };
  if (ranks.empty()) throw invalid("the member set is empty");
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= size_) throw invalid(fmt::format("rank {} is not in [0, {})", ranks[i], size_));
    if (i > 0 && ranks[i] <= ranks[i - 1]) throw invalid("ranks must be sorted and unique");
  }
  if (!std::binary_search(ranks.begin(), ranks.end(), rank_))
    throw invalid("the caller is not a member (only members create a group)");

  MPI_Group parent, group;
  check(MPI_Comm_group(comm_, &parent), "subgroup");
  check(MPI_Group_incl(parent, static_cast<int>(ranks.size()), ranks.data(), &group), "subgroup");
  MPI_Comm comm;
  int rc = MPI_Comm_create_group(comm_, group, group_tag(ranks), &comm);
  MPI_Group_free(&group);
  MPI_Group_free(&parent);
  check(rc, "subgroup");
  auto& slot = subgroups_[ranks];
  slot = std::make_unique<MpiCommunicator>(comm);
  return slot.get();
}

// The cache key is the whole partition, every rank's (colour, key), gathered first: a rank's own pair can repeat
// while others change, and then it alone would skip MPI_Comm_split. The gather is a few bytes; splits are rare.
Communicator* MpiCommunicator::split(int color, int key) {
  const int mine[2] = {color < 0 ? -1 : color, key};
  std::vector<int> partition(2 * static_cast<std::size_t>(size_));
  check(MPI_Allgather(mine, 2, MPI_INT, partition.data(), 2, MPI_INT, comm_), "split");
  if (auto it = splits_.find(partition); it != splits_.end()) return it->second.get();
  MPI_Comm comm;
  check(MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, key, &comm), "split");
  auto& slot = splits_[partition];
  if (comm != MPI_COMM_NULL) slot = std::make_unique<MpiCommunicator>(comm);
  return slot.get();
}

// A node is the ranks with one host name. On a cluster those are the ranks that share memory
// (MPI_COMM_TYPE_SHARED); in a two-level emulated cluster (scripts/cluster/emucluster.sh), where each rank is a host
// of its own to MPI so that nothing crosses shared memory, the host name is still the emulated node's.
Communicator* MpiCommunicator::node_group() {
  if (node_) return node_.get();
  std::array<char, 256> mine{};
  if (::gethostname(mine.data(), mine.size() - 1) != 0) throw_runtime_error("node_group: gethostname failed");
  std::vector<char> all(mine.size() * static_cast<std::size_t>(size_));
  check(MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_CHAR, all.data(), static_cast<int>(mine.size()),
                      MPI_CHAR, comm_),
        "node_group");
  int colour = 0;  // the lowest rank with this host name
  while (std::string_view(all.data() + colour * mine.size()) != std::string_view(mine.data())) ++colour;
  MPI_Comm comm;
  check(MPI_Comm_split(comm_, colour, rank_, &comm), "node_group");
  node_ = std::make_unique<MpiCommunicator>(comm);
  return node_.get();
}

}  // namespace trident
