// The sequence blaster's and the bucketing's dynamic programs against brute force on small inputs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <limits>
#include <random>

#include "parallel/flexsp/blaster.h"
#include "parallel/flexsp/bucketing.h"

namespace trident::flexsp {
namespace {

// Every way to cut n items into `parts` non-empty consecutive chunks: the boundaries 0 < b1 < ... < n.
void each_cut(size_t n, size_t parts, const std::function<void(const std::vector<size_t>&)>& fn) {
  std::vector<size_t> bounds = {0};
  std::function<void(size_t)> next = [&](size_t from) {
    if (bounds.size() == parts) {
      bounds.push_back(n);
      fn(bounds);
      bounds.pop_back();
      return;
    }
    for (size_t b = from; b + (parts - bounds.size()) <= n - 1 + 1 && b < n; ++b) {
      bounds.push_back(b);
      next(b + 1);
      bounds.pop_back();
    }
  };
  if (parts == 1) {
    fn({0, n});
    return;
  }
  next(1);
}

int64_t largest_chunk(std::span<const int64_t> lengths, const std::vector<size_t>& bounds) {
  int64_t largest = 0;
  for (size_t c = 0; c + 1 < bounds.size(); ++c) {
    int64_t sum = 0;
    for (size_t i = bounds[c]; i < bounds[c + 1]; ++i) sum += lengths[i];
    largest = std::max(largest, sum);
  }
  return largest;
}

int64_t padding(std::span<const int64_t> ascending, const std::vector<size_t>& bounds) {
  int64_t pad = 0;
  for (size_t c = 0; c + 1 < bounds.size(); ++c)
    for (size_t i = bounds[c]; i < bounds[c + 1]; ++i) pad += ascending[bounds[c + 1] - 1] - ascending[i];
  return pad;
}

TEST_CASE("the blaster's chunking minimises the largest micro-batch like brute force", "[flexsp]") {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 300; ++trial) {
    const size_t n = 1 + rng() % 10;
    std::vector<int64_t> lengths(n);
    for (auto& s : lengths) s = 1 + static_cast<int64_t>(rng() % (trial % 2 ? 1000 : 20));
    std::sort(lengths.rbegin(), lengths.rend());
    for (size_t parts = 1; parts <= n; ++parts) {
      int64_t brute = std::numeric_limits<int64_t>::max();
      each_cut(n, parts, [&](const std::vector<size_t>& b) { brute = std::min(brute, largest_chunk(lengths, b)); });
      const std::vector<size_t> bounds = split_min_max(lengths, static_cast<int64_t>(parts));
      INFO("n " << n << " parts " << parts);
      REQUIRE(bounds.size() == parts + 1);
      CHECK(bounds.front() == 0);
      CHECK(bounds.back() == n);
      for (size_t c = 0; c < parts; ++c) CHECK(bounds[c] < bounds[c + 1]);
      CHECK(largest_chunk(lengths, bounds) == brute);
    }
  }
}

TEST_CASE("bucketing minimises padding like brute force", "[flexsp]") {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 300; ++trial) {
    const size_t n = 1 + rng() % 10;
    std::vector<int64_t> lengths(n);
    for (auto& s : lengths) s = 1 + static_cast<int64_t>(rng() % (trial % 2 ? 500 : 6));  // some equal lengths
    std::sort(lengths.begin(), lengths.end());
    for (int64_t q = 1; q <= 5; ++q) {
      int64_t brute = std::numeric_limits<int64_t>::max();
      for (size_t parts = 1; parts <= std::min<size_t>(n, static_cast<size_t>(q)); ++parts)
        each_cut(n, parts, [&](const std::vector<size_t>& b) { brute = std::min(brute, padding(lengths, b)); });
      const Buckets b = bucket_lengths(lengths, q);
      INFO("n " << n << " q " << q);
      CHECK(b.padding == brute);
      CHECK(padding(lengths, b.begin) == b.padding);
      REQUIRE(b.size() <= static_cast<size_t>(q));
      for (size_t i = 0; i < b.size(); ++i) CHECK(b.length[i] == lengths[b.begin[i + 1] - 1]);
      for (size_t i = 1; i < b.size(); ++i) CHECK(b.length[i - 1] < b.length[i]);  // equal lengths share a bucket
    }
  }
  // as many buckets as distinct lengths: no padding at all
  const std::vector<int64_t> distinct = {1, 1, 2, 5, 5, 5, 9};
  CHECK(bucket_lengths(distinct, 4).padding == 0);
  CHECK(bucket_lengths(distinct, 4).size() == 4);
}

}  // namespace
}  // namespace trident::flexsp
