#pragma once
// The sequence blaster (docs/methods.md §3.2): a global batch that does not fit the cluster at once is cut into M
// micro-batches of consecutive sequences (sorted longest first by the caller) so the largest micro-batch holds as
// few tokens as possible.
#include <cstdint>
#include <span>
#include <vector>

namespace trident::flexsp {

// Cuts `lengths`, in the given order, into `parts` consecutive chunks (1 <= parts <= lengths.size()) minimising the
// largest chunk's token sum. Returns the chunk boundaries: parts + 1 indices, from 0 to lengths.size().
// DP[k][i] = min_j max(DP[j][i-1], sum(j..k)); the first term grows with j and the second shrinks, so the minimum
// sits where they cross, found by binary search: O(parts * K log K).
std::vector<size_t> split_min_max(std::span<const int64_t> lengths, int64_t parts);

}  // namespace trident::flexsp
