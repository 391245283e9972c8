#pragma once
// Sequence-parallel tests: every rank holds the rows [shard_begin(N, T, t), shard_begin(N, T, t+1)) of a global
// (N, width) array (parallel/sp/shard.h); gather_rows puts the ranks' rows back together, in rank order, on every rank.
#include <cstdint>
#include <vector>

#include "parallel/comm/communicator.h"
#include "parallel/sp/shard.h"

namespace trident::test {

inline std::vector<float> gather_rows(Communicator& sp, const std::vector<float>& mine, int64_t N, int64_t width) {
  std::vector<int64_t> counts(sp.size()), displs(sp.size());
  for (int r = 0; r < sp.size(); ++r) {
    displs[r] = shard_begin(N, sp.size(), r) * width;
    counts[r] = shard_begin(N, sp.size(), r + 1) * width - displs[r];
  }
  std::vector<float> all(N * width);
  sp.allgatherv(mine.data(), static_cast<int64_t>(mine.size()), all.data(), counts, displs, CommType::f32);
  return all;
}

}  // namespace trident::test
