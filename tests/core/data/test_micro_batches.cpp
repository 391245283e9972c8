#include <algorithm>
#include <limits>
#include <vector>

#include <catch2/catch.hpp>

#include "core/data/batch.h"
#include "core/data/rng.h"

using namespace trident;

namespace {

Batch batch_of(const std::vector<int32_t>& lengths) {
  Batch batch;
  int32_t next = 0;
  for (int32_t n : lengths) {
    std::vector<int32_t> ids(n + 1);
    for (int32_t& id : ids) id = next++;
    batch.append_sequence(ids);
  }
  return batch;
}

// The smallest possible largest group when `lengths` is cut into `n` non-empty consecutive groups (exhaustive DP).
int64_t best_max_tokens(const std::vector<int32_t>& lengths, int n) {
  const auto s = static_cast<int>(lengths.size());
  constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  std::vector<std::vector<int64_t>> best(n + 1, std::vector<int64_t>(s + 1, kNone));
  best[0][0] = 0;
  for (int k = 1; k <= n; ++k)
    for (int i = 1; i <= s; ++i) {
      int64_t sum = 0;
      for (int j = i - 1; j >= 0; --j) {
        sum += lengths[j];
        if (best[k - 1][j] != kNone) best[k][i] = std::min(best[k][i], std::max(best[k - 1][j], sum));
      }
    }
  return best[n][s];
}

}  // namespace

TEST_CASE("micro-batches are consecutive sequences with the smallest possible largest one", "[core][data]") {
  for (uint64_t trial = 0; trial < 200; ++trial) {
    std::vector<int32_t> lengths(1 + hash_of(trial, 0) % 12);
    for (std::size_t i = 0; i < lengths.size(); ++i) lengths[i] = static_cast<int32_t>(1 + hash_of(trial, 1, i) % 40);
    const Batch batch = batch_of(lengths);
    for (int n = 1; n <= 6; ++n) {
      INFO("trial " << trial << ", n = " << n);
      std::vector<Batch> parts = split_micro_batches(batch, n);
      REQUIRE(static_cast<int>(parts.size()) == n);
      Batch joined;
      int64_t largest = 0;
      for (const Batch& part : parts) {
        REQUIRE(part.cu_seqlens.front() == 0);
        REQUIRE(part.cu_seqlens.back() == part.num_tokens());
        largest = std::max(largest, part.num_tokens());
        joined.tokens.insert(joined.tokens.end(), part.tokens.begin(), part.tokens.end());
        joined.targets.insert(joined.targets.end(), part.targets.begin(), part.targets.end());
        joined.positions.insert(joined.positions.end(), part.positions.begin(), part.positions.end());
        for (int s = 0; s < part.num_sequences(); ++s)
          joined.cu_seqlens.push_back(joined.cu_seqlens.back() + part.cu_seqlens[s + 1] - part.cu_seqlens[s]);
      }
      CHECK(joined == batch);
      const int used = std::min(n, batch.num_sequences());
      for (int g = 0; g < used; ++g) CHECK(parts[g].num_sequences() >= 1);
      for (int g = used; g < n; ++g) CHECK(parts[g] == Batch{});
      CHECK(largest == best_max_tokens(lengths, used));
    }
  }
}

TEST_CASE("micro-batch examples", "[core][data]") {
  auto sizes = [](const std::vector<Batch>& parts) {
    std::vector<int64_t> tokens;
    for (const Batch& part : parts) tokens.push_back(part.num_tokens());
    return tokens;
  };
  CHECK(sizes(split_micro_batches(batch_of({5, 1, 1, 1, 5, 3}), 3)) == std::vector<int64_t>{7, 6, 3});
  CHECK(sizes(split_micro_batches(batch_of({4, 4, 4, 4}), 2)) == std::vector<int64_t>{8, 8});
  CHECK(sizes(split_micro_batches(batch_of({1, 1, 1, 9}), 4)) == std::vector<int64_t>{1, 1, 1, 9});
  CHECK(sizes(split_micro_batches(batch_of({7, 2}), 4)) == std::vector<int64_t>{7, 2, 0, 0});
  CHECK(sizes(split_micro_batches(Batch{}, 2)) == std::vector<int64_t>{0, 0});
  CHECK(split_micro_batches(batch_of({3, 4}), 1).front() == batch_of({3, 4}));
}
