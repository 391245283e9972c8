#pragma once
// A packed batch of random documents for model tests: targets are the next token, -1 at each document's end.
#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "core/model/token_batch.h"

namespace trident::test {

struct OwnedBatch {
  std::vector<int32_t> tokens, targets, positions, cu_seqlens{0};
  TokenBatch view() const {
    return {tokens.data(), targets.data(), positions.data(), cu_seqlens.data(), static_cast<int64_t>(tokens.size()),
            static_cast<int>(cu_seqlens.size()) - 1};
  }
  int64_t num_targets() const {
    return std::count_if(targets.begin(), targets.end(), [](int32_t t) { return t >= 0; });
  }
};

// Documents of the given lengths, token ids uniform in [0, vocab), deterministic in `seed`.
inline OwnedBatch make_batch(const std::vector<int>& lengths, int vocab, uint64_t seed) {
  OwnedBatch b;
  std::mt19937_64 rng(seed);
  for (int len : lengths) {
    const std::size_t first = b.tokens.size();
    for (int i = 0; i < len; ++i) {
      b.tokens.push_back(static_cast<int32_t>(rng() % static_cast<uint64_t>(vocab)));
      b.positions.push_back(i);
    }
    for (int i = 0; i < len; ++i) b.targets.push_back(i + 1 < len ? b.tokens[first + i + 1] : -1);
    b.cu_seqlens.push_back(static_cast<int32_t>(b.tokens.size()));
  }
  return b;
}

}  // namespace trident::test
