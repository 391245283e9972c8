#pragma once
// Ring Attention's block-op tests: a packed batch cut into key blocks (kernels/cpu/attention_block.h).
#include <cstdint>
#include <vector>

namespace trident::test {

// Global position of each token's document start in a packed batch.
inline std::vector<int64_t> document_begins(const std::vector<int32_t>& cu) {
  std::vector<int64_t> begin;
  for (std::size_t s = 0; s + 1 < cu.size(); ++s)
    for (int32_t i = cu[s]; i < cu[s + 1]; ++i) begin.push_back(cu[s]);
  return begin;
}

// The [k | v] columns of rows [b, e) of qkv (N, 3C) as one (e - b, 2C) block.
inline std::vector<float> key_block(const std::vector<float>& qkv, int64_t b, int64_t e, int64_t C) {
  std::vector<float> kv;
  for (int64_t i = b; i < e; ++i) kv.insert(kv.end(), qkv.begin() + i * 3 * C + C, qkv.begin() + (i + 1) * 3 * C);
  return kv;
}

}  // namespace trident::test
