#include "parallel/flexsp/bucketing.h"

#include <algorithm>
#include <limits>

#include "kernels/common/error.h"

namespace trident::flexsp {

Buckets bucket_lengths(std::span<const int64_t> ascending, int64_t max_buckets) {
  const size_t n = ascending.size();
  TRIDENT_CHECK(n >= 1 && max_buckets >= 1, "{} lengths in {} buckets", n, max_buckets);
  TRIDENT_CHECK(std::is_sorted(ascending.begin(), ascending.end()), "lengths not sorted");
  std::vector<int64_t> prefix(n + 1, 0);
  for (size_t k = 0; k < n; ++k) prefix[k + 1] = prefix[k] + ascending[k];
  // pad(j, k): positions [j, k) rounded up to ascending[k-1].
  auto pad = [&](size_t j, size_t k) { return ascending[k - 1] * static_cast<int64_t>(k - j) - (prefix[k] - prefix[j]); };
  const size_t q_max = std::min<size_t>(static_cast<size_t>(max_buckets), n);
  constexpr int64_t kInf = std::numeric_limits<int64_t>::max();
  std::vector<std::vector<int64_t>> err(q_max + 1, std::vector<int64_t>(n + 1, kInf));
  std::vector<std::vector<size_t>> cut(q_max + 1, std::vector<size_t>(n + 1, 0));
  err[0][0] = 0;
  for (size_t q = 1; q <= q_max; ++q)
    for (size_t k = q; k <= n; ++k)
      for (size_t j = q - 1; j < k; ++j) {
        if (err[q - 1][j] == kInf) continue;
        // a bucket boundary inside a run of equal lengths never helps; keep runs whole so buckets are distinct
        if (j > 0 && j < n && ascending[j] == ascending[j - 1]) continue;
        int64_t value = err[q - 1][j] + pad(j, k);
        if (value < err[q][k]) err[q][k] = value, cut[q][k] = j;
      }
  size_t best_q = 1;
  for (size_t q = 1; q <= q_max; ++q)
    if (err[q][n] < err[best_q][n]) best_q = q;  // the fewest buckets reaching the least padding
  Buckets b;
  b.padding = err[best_q][n];
  b.begin.assign(best_q + 1, 0);
  b.begin[best_q] = n;
  for (size_t q = best_q; q >= 1; --q) b.begin[q - 1] = cut[q][b.begin[q]];
  for (size_t q = 0; q < best_q; ++q) b.length.push_back(ascending[b.begin[q + 1] - 1]);
  return b;
}

}  // namespace trident::flexsp
