#include "core/data/batch.h"

#include <algorithm>
#include <numeric>

#include "kernels/common/error.h"

namespace trident {

int64_t Batch::num_targets() const {
  return std::count_if(targets.begin(), targets.end(), [](int32_t t) { return t >= 0; });
}

std::vector<int64_t> Batch::sequence_lengths() const {
  std::vector<int64_t> out;
  for (int s = 0; s < num_sequences(); ++s) out.push_back(cu_seqlens[s + 1] - cu_seqlens[s]);
  return out;
}

int64_t Batch::longest_sequence() const {
  int64_t longest = 0;
  for (int s = 0; s < num_sequences(); ++s) longest = std::max<int64_t>(longest, cu_seqlens[s + 1] - cu_seqlens[s]);
  return longest;
}

void Batch::append_sequence(std::span<const int32_t> ids) {
  TRIDENT_CHECK(ids.size() >= 2, "a sequence needs at least one pair, got {} ids", ids.size());
  const auto count = static_cast<int32_t>(ids.size() - 1);
  tokens.insert(tokens.end(), ids.begin(), ids.end() - 1);
  targets.insert(targets.end(), ids.begin() + 1, ids.end());
  for (int32_t i = 0; i < count; ++i) positions.push_back(i);
  cu_seqlens.push_back(cu_seqlens.back() + count);
}

namespace {

// Sequences [first, last) of `batch` as a batch of their own.
Batch slice(const Batch& batch, int first, int last) {
  Batch part;
  const int32_t begin = batch.cu_seqlens[first];
  const int32_t end = batch.cu_seqlens[last];
  part.tokens.assign(batch.tokens.begin() + begin, batch.tokens.begin() + end);
  part.targets.assign(batch.targets.begin() + begin, batch.targets.begin() + end);
  part.positions.assign(batch.positions.begin() + begin, batch.positions.begin() + end);
  for (int s = first; s < last; ++s) part.cu_seqlens.push_back(batch.cu_seqlens[s + 1] - begin);
  return part;
}

// Number of groups greedy filling makes when no group may exceed `cap` tokens.
int groups_needed(std::span<const int64_t> lengths, int64_t cap) {
  int groups = 0;
  int64_t filled = 0;
  for (const int64_t length : lengths) {
    if (groups == 0 || filled + length > cap) {
      ++groups;
      filled = 0;
    }
    filled += length;
  }
  return groups;
}

}  // namespace

std::vector<std::pair<int, int>> micro_batch_bounds(std::span<const int64_t> lengths, int n) {
  TRIDENT_CHECK(n >= 1, "n = {}", n);
  const int sequences = static_cast<int>(lengths.size());
  // The smallest cap that n groups can meet: binary search between the longest sequence and the whole batch.
  int64_t lo = lengths.empty() ? 0 : *std::max_element(lengths.begin(), lengths.end());
  int64_t hi = std::max(lo, std::accumulate(lengths.begin(), lengths.end(), int64_t{0}));
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (groups_needed(lengths, mid) <= n)
      hi = mid;
    else
      lo = mid + 1;
  }
  // Fill greedily under that cap, but close a group early when the sequences left are just enough to give each
  // remaining group one: splitting a group never raises the largest one.
  std::vector<std::pair<int, int>> bounds;
  int first = 0;
  for (int g = 0; g < n; ++g) {
    int last = std::min(first + 1, sequences);
    int64_t filled = last > first ? lengths[first] : 0;
    while (last < sequences && filled + lengths[last] <= lo && sequences - last > n - g - 1) filled += lengths[last++];
    bounds.emplace_back(first, last);
    first = last;
  }
  TRIDENT_CHECK(first == sequences, "{} of {} sequences placed in {} micro-batches", first, sequences, n);
  return bounds;
}

std::vector<Batch> split_micro_batches(const Batch& batch, int n) {
  std::vector<Batch> parts;
  for (const auto& [first, last] : micro_batch_bounds(batch.sequence_lengths(), n))
    parts.push_back(slice(batch, first, last));
  return parts;
}

std::vector<Batch> split_within(const Batch& batch, int n, int64_t capacity) {
  if (batch.longest_sequence() > capacity) return {};
  for (;; ++n) {
    std::vector<Batch> parts = split_micro_batches(batch, n);
    int64_t largest = 0;
    for (const Batch& p : parts) largest = std::max(largest, p.num_tokens());
    if (largest > capacity) continue;  // ends by n = sequences at the latest: one sequence a part fits
    std::erase_if(parts, [](const Batch& p) { return p.num_tokens() == 0; });
    return parts;
  }
}

}  // namespace trident
