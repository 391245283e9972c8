#pragma once
// The token layout every sequence-parallel attention op shares (Ulysses, Ring Attention, LASP): an SP group of T
// ranks holds one packed batch of N tokens of several documents. The global cu_seqlens is identical on every rank,
// and rank t holds the contiguous token range [floor(N*t/T), floor(N*(t+1)/T)); documents may span ranks and N need
// not divide by T. Each op takes the rank's LOCAL qkv (n_local, 3C) and writes its LOCAL out (n_local, C).
#include <cstdint>
#include <numeric>
#include <vector>

namespace trident {

// The packed batch as every rank of the group sees it (layouts as in kernels/README.md).
struct SpBatch {
  const int32_t* cu_seqlens;  // (n_seq + 1) global offsets, cu_seqlens[n_seq] = N
  int n_seq;
  int64_t N;  // tokens of the whole batch
  int H, D;   // heads and head width; C = H * D

  int64_t C() const { return int64_t(H) * D; }
  // Throws RuntimeError when the sizes disagree (cu_seqlens[n_seq] != N, non-positive H or D).
  void check(const char* op) const;
};

// Bytes one rank hands to its communicator in one call of an op (what CommCounters::total_bytes() shows).
struct SpTraffic {
  int64_t forward = 0, backward = 0;
};

// First token of rank t's shard; shard_begin(N, T, T) = N.
inline int64_t shard_begin(int64_t N, int T, int t) { return N * t / T; }
inline int64_t shard_size(int64_t N, int T, int t) { return shard_begin(N, T, t + 1) - shard_begin(N, T, t); }
// The T + 1 shard boundaries.
std::vector<int64_t> shard_bounds(int64_t N, int T);

// USP's Ulysses degree (parallel/sp/model_op.h) on a group of `group` ranks: the largest that divides the group, the
// H heads and the ranks of a node (so each Ulysses group stays on a node: NVLink inside, the ring over the slower
// links between nodes), or 1 when nodes hold different numbers of ranks (ranks_per_node 0). USP's ring spans the
// group / degree Ulysses groups.
inline int64_t usp_ulysses_degree(int64_t group, int64_t H, int64_t ranks_per_node) {
  return ranks_per_node <= 0 ? 1 : std::gcd(std::gcd(group, H), ranks_per_node);
}

// For each global token position p in [begin, end): the position of the first token of p's document. Attention of
// the token at p may use exactly the keys at positions [doc_begin, p].
std::vector<int64_t> document_begins(const SpBatch& batch, int64_t begin, int64_t end);

}  // namespace trident
