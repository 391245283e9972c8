// Which range of the flat parameters each rank of a sharding group owns, and the group parallel.zero.group names.
#include <algorithm>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "kernels/common/error.h"
#include "parallel/zero/config.h"
#include "parallel/zero/shards.h"
#include "support/config_errors.h"

using namespace trident;

TEST_CASE("shards cover the buffer in order, on 16-float boundaries, as evenly as the units go", "[zero]") {
  for (int64_t numel : {0, 1, 15, 16, 17, 100, 1000, 123457}) {
    for (int ranks : {1, 2, 3, 4, 7, 8, 64}) {
      const std::vector<FlatRange> r = shard_ranges(numel, ranks);
      INFO(numel << " floats over " << ranks << " ranks");
      REQUIRE(static_cast<int>(r.size()) == ranks);
      int64_t at = 0, longest = 0, shortest_nonlast = numel;
      for (int k = 0; k < ranks; ++k) {
        CHECK(r[k].offset == at);
        CHECK((r[k].offset % kShardAlign == 0 || r[k].offset == numel));
        at += r[k].numel;
        longest = std::max(longest, r[k].numel);
        if (r[k].offset + r[k].numel < numel) shortest_nonlast = std::min(shortest_nonlast, r[k].numel);
        if (k > 0) CHECK(r[k].numel <= r[k - 1].numel);
      }
      CHECK(at == numel);
      // no rank holds more than one unit beyond any other (the last range may be short of a whole unit)
      CHECK(longest - std::min(shortest_nonlast, longest) <= kShardAlign);
      CHECK(longest == r.front().numel);
    }
  }
  // a count the ranks do not divide: 100 floats are 7 units, 2 + 2 + 2 + 1 over 4 ranks, the last one 4 floats short
  CHECK(shard_ranges(100, 4) == std::vector<FlatRange>{{0, 32}, {32, 32}, {64, 32}, {96, 4}});
  // more ranks than units: the last ranks own nothing
  CHECK(shard_ranges(20, 4) == std::vector<FlatRange>{{0, 16}, {16, 4}, {20, 0}, {20, 0}});
}

TEST_CASE("parallel.zero.group: world or a node's ranks, nodes of unequal size refused", "[zero]") {
  Config c;
  zero_config(c).stage = 1;
  const NodeLayout two_by_two{{0, 0, 1, 1}, {0, 1, 0, 1}, 2};
  CHECK(zero_group_ranks(c, two_by_two) == 4);
  zero_config(c).group = "node";
  CHECK(zero_group_ranks(c, two_by_two) == 2);
  const NodeLayout three_and_one{{0, 0, 0, 1}, {0, 1, 2, 0}, 2};
  test::check_config_error([&] { zero_group_ranks(c, three_and_one); },
                           {"parallel.zero.group", "3, 1", "parallel.zero.group: world"});
  zero_config(c).group = "world";
  CHECK(zero_group_ranks(c, three_and_one) == 4);
  // a described cluster (trident plan): 64 ranks, 8 a node
  CHECK(zero_ranks(c, 64, 8) == 64);
  zero_config(c).group = "node";
  CHECK(zero_ranks(c, 64, 8) == 8);
  zero_config(c).stage = 0;
  CHECK(zero_ranks(c, 64, 8) == 1);  // nothing sharded
  CHECK(zero_group_ranks(c, two_by_two) == 1);
}

TEST_CASE("a rank's AdamW holds every parameter at stage 0, the longest shard at stage 1", "[zero]") {
  Config c;
  CHECK(owned_params(c, 1000, 4) == 1000);
  zero_config(c).stage = 1;
  CHECK(owned_params(c, 1000, 4) == 256);  // 63 units: 16 + 16 + 16 + 15
  CHECK(owned_params(c, 1000, 1) == 1000);
}
