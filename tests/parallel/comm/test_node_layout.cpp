// node_layout: groups that honour node boundaries, checked on hand-made layouts (any node count) and, under mpirun,
// on the real one (every rank of these tests runs on this one machine).
#include <numeric>
#include <vector>

#include <catch2/catch.hpp>

#include "parallel/comm/node_layout.h"

using namespace trident;
using Groups = std::vector<std::vector<int>>;

namespace {

// 2 nodes x 2 ranks placed round robin (mpirun --map-by node): ranks 0 and 2 on node 0, 1 and 3 on node 1.
NodeLayout round_robin() { return {{0, 1, 0, 1}, {0, 0, 1, 1}, 2}; }

// 3 nodes holding 3, 2 and 1 ranks, placed node by node.
NodeLayout uneven() { return {{0, 0, 0, 1, 1, 2}, {0, 1, 2, 0, 1, 0}, 3}; }

}  // namespace

TEST_CASE("node_major lists each node's ranks together", "[comm]") {
  CHECK(round_robin().node_major() == std::vector<int>{0, 2, 1, 3});
  CHECK(uneven().node_major() == std::vector<int>{0, 1, 2, 3, 4, 5});
}

TEST_CASE("groups within nodes never straddle a node; a node too small gives none", "[comm]") {
  CHECK(round_robin().groups_within_nodes(2) == Groups{{0, 2}, {1, 3}});
  CHECK(round_robin().groups_within_nodes(1) == Groups{{0}, {2}, {1}, {3}});
  CHECK(round_robin().groups_within_nodes(4).empty());
  CHECK(uneven().groups_within_nodes(2) == Groups{{0, 1}, {3, 4}});
  CHECK(uneven().groups_within_nodes(3) == Groups{{0, 1, 2}});
}

TEST_CASE("groups across nodes take one rank per node before a second", "[comm]") {
  const NodeLayout l = round_robin();
  CHECK(l.groups_across_nodes(2) == Groups{{0, 1}, {2, 3}});
  CHECK(l.groups_across_nodes(4) == Groups{{0, 1, 2, 3}});
  CHECK(l.nodes_spanned({0, 1}) == 2);
  CHECK(l.nodes_spanned({0, 2}) == 1);
  const NodeLayout u = uneven();
  CHECK(u.groups_across_nodes(3) == Groups{{0, 3, 5}, {1, 4, 2}});
  CHECK(u.nodes_spanned({1, 4, 2}) == 2);
  CHECK(u.ranks_on(0) == 3);
  CHECK(u.ranks_on(2) == 1);
}

TEST_CASE("node_layout of this machine: one node, ranks in order", "[comm][mpi]") {
  Communicator& comm = world();
  const NodeLayout l = node_layout(comm);
  std::vector<int> all(comm.size());
  std::iota(all.begin(), all.end(), 0);
  CHECK(l.nodes == 1);
  CHECK(l.node == std::vector<int>(comm.size(), 0));
  CHECK(l.local_rank == all);
  CHECK(l.node_major() == all);
  CHECK(l.groups_within_nodes(comm.size()) == Groups{all});
}
