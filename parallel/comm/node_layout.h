#pragma once
// Where a communicator's ranks run: the node of each rank (the ranks with one host name, node_group()) and its index
// on that node. Groups built from it honour node boundaries.
#include <vector>

#include "parallel/comm/communicator.h"

namespace trident {

struct NodeLayout {
  std::vector<int> node;        // node index of each rank; nodes are numbered in the order of their lowest rank
  std::vector<int> local_rank;  // each rank's index among its node's ranks, in rank order
  int nodes = 1;

  int ranks_on(int node_index) const;
  // Every rank, node by node (node 0's ranks in rank order, then node 1's, ...). A slice of g consecutive entries
  // lies on one node whenever g divides each node's rank count; with ranks placed node by node (mpirun's default
  // --map-by slot) this is plain rank order.
  std::vector<int> node_major() const;
  // Disjoint groups of n ranks, each on one node: every node gives as many as it holds (in rank order).
  std::vector<std::vector<int>> groups_within_nodes(int n) const;
  // Disjoint groups of n ranks, each spread over as many nodes as it can (the ranks dealt across the nodes: local
  // rank 0 of each node, then local rank 1 of each, ..., cut into consecutive groups).
  std::vector<std::vector<int>> groups_across_nodes(int n) const;
  // The number of distinct nodes among `ranks`.
  int nodes_spanned(const std::vector<int>& ranks) const;
};

// Collective: every member of `comm` calls it (one node_group(), one small allgather).
NodeLayout node_layout(Communicator& comm);

}  // namespace trident
