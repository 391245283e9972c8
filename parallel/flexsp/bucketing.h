#pragma once
// Bucketing for the MILP (docs/methods.md §3.1): the lengths of a micro-batch, sorted ascending, are cut into at most
// Q consecutive buckets; a bucket stands for its sequences at its largest length. Boundaries minimise the total
// padding sum_q sum_{k in q} (max_q - s_k), by err[k][q] = min_{j<k} err[j][q-1] + pad(j+1..k), O(Q K^2).
#include <cstdint>
#include <span>
#include <vector>

namespace trident::flexsp {

struct Buckets {
  std::vector<size_t> begin;    // bucket q holds sorted positions [begin[q], begin[q+1]); size buckets + 1
  std::vector<int64_t> length;  // its largest length
  int64_t padding = 0;          // total tokens added by rounding every length up to its bucket's
  size_t size() const { return length.size(); }
};

// `ascending` sorted ascending, non-empty; 1 <= max_buckets. Uses no more buckets than distinct lengths.
Buckets bucket_lengths(std::span<const int64_t> ascending, int64_t max_buckets);

}  // namespace trident::flexsp
