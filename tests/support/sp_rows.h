#pragma once
// Sequence-parallel tests: every rank holds the rows [shard_begin(N, T, t), shard_begin(N, T, t+1)) of a global
// (N, width) array (parallel/sp/shard.h); gather_rows puts the ranks' rows back together, in rank order, on every rank,
// and packed_problem builds the whole batch a test splits.
#include <cstdint>
#include <vector>

#include "kernels/shared/decay.h"
#include "parallel/comm/communicator.h"
#include "parallel/sp/shard.h"
#include "support/random.h"

namespace trident::test {

// Rows [begin, end) of a row-major (N, width) array: one rank's shard.
inline std::vector<float> rows(const std::vector<float>& all, int64_t begin, int64_t end, int64_t width) {
  return {all.begin() + begin * width, all.begin() + end * width};
}

// The whole packed batch every rank builds alike: documents of `lengths`, random qkv (N, 3C) and dout (N, C), a
// dqkv0 (N, 3C) for backward to accumulate into, and the decay slopes of H heads.
struct PackedProblem {
  std::vector<int32_t> cu{0};
  int n_seq = 0;
  int64_t N = 0, C = 0;
  std::vector<float> qkv, dout, dqkv0, slopes;
};
inline PackedProblem packed_problem(const std::vector<int>& lengths, int H, int D, uint64_t seed) {
  PackedProblem p;
  for (int n : lengths) p.cu.push_back(p.cu.back() + n);
  p.n_seq = static_cast<int>(lengths.size());
  p.N = p.cu.back();
  p.C = int64_t(H) * D;
  p.qkv = random_normal<float>(p.N * 3 * p.C, seed, 0.5);
  p.dout = random_normal<float>(p.N * p.C, seed + 1);
  p.dqkv0 = random_normal<float>(p.N * 3 * p.C, seed + 2, 0.1);
  p.slopes = linear_attention_slopes(H);
  return p;
}

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
