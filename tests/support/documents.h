#pragma once
// A batch of documents of the given lengths with random tokens (targets: the next token, -1 at each document's end).
#include <cstdint>
#include <random>
#include <vector>

#include "core/data/batch.h"

namespace trident::test {

inline Batch random_documents(const std::vector<int>& lengths, uint64_t seed, int vocab) {
  Batch b;
  std::mt19937_64 rng(seed);
  for (int len : lengths) {
    std::vector<int32_t> ids(static_cast<std::size_t>(len) + 1);
    for (int32_t& id : ids) id = static_cast<int32_t>(rng() % static_cast<uint64_t>(vocab));
    b.append_sequence(ids);
  }
  return b;
}

}  // namespace trident::test
