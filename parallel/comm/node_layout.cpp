#include "parallel/comm/node_layout.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <utility>

namespace trident {

NodeLayout node_layout(Communicator& comm) {
  Communicator& node = *comm.node_group();
  // A node is named by its lowest member's global rank; node_group's members are in rank order.
  const int32_t mine[2] = {node.members().front(), node.rank()};
  std::vector<int32_t> all(2 * static_cast<std::size_t>(comm.size()));
  comm.allgather(mine, all.data(), 2, CommType::i32);
  NodeLayout layout;
  std::vector<int32_t> leaders;  // in order of first appearance = order of each node's lowest rank
  for (int r = 0; r < comm.size(); ++r) {
    auto it = std::find(leaders.begin(), leaders.end(), all[2 * r]);
    if (it == leaders.end()) it = leaders.insert(leaders.end(), all[2 * r]);
    layout.node.push_back(static_cast<int>(it - leaders.begin()));
    layout.local_rank.push_back(all[2 * r + 1]);
  }
  layout.nodes = static_cast<int>(leaders.size());
  return layout;
}

int NodeLayout::ranks_on(int node_index) const {
  return static_cast<int>(std::count(node.begin(), node.end(), node_index));
}

std::vector<int> NodeLayout::node_major() const {
  std::vector<int> order;
  for (int n = 0; n < nodes; ++n)
    for (int r = 0; r < static_cast<int>(node.size()); ++r)
      if (node[r] == n) order.push_back(r);
  return order;
}

std::vector<std::vector<int>> NodeLayout::groups_within_nodes(int n) const {
  std::vector<std::vector<int>> groups;
  for (int index = 0; index < nodes; ++index) {
    std::vector<int> group;
    for (int r = 0; r < static_cast<int>(node.size()); ++r) {
      if (node[r] != index) continue;
      group.push_back(r);
      if (static_cast<int>(group.size()) == n) groups.push_back(std::exchange(group, {}));
    }
  }
  return groups;
}

std::vector<std::vector<int>> NodeLayout::groups_across_nodes(int n) const {
  std::vector<int> dealt;
  for (int local = 0; dealt.size() < node.size(); ++local)
    for (int index = 0; index < nodes; ++index)
      for (int r = 0; r < static_cast<int>(node.size()); ++r)
        if (node[r] == index && local_rank[r] == local) dealt.push_back(r);
  std::vector<std::vector<int>> groups;
  for (std::size_t begin = 0; begin + n <= dealt.size(); begin += n)
    groups.emplace_back(dealt.begin() + static_cast<std::ptrdiff_t>(begin),
                        dealt.begin() + static_cast<std::ptrdiff_t>(begin + n));
  return groups;
}

int NodeLayout::nodes_spanned(const std::vector<int>& ranks) const {
  std::set<int> seen;
  for (int r : ranks) seen.insert(node[r]);
  return static_cast<int>(seen.size());
}

}  // namespace trident
