#include "parallel/flexsp/blaster.h"

#include <algorithm>
#include <limits>

#include "kernels/common/error.h"

namespace trident::flexsp {

std::vector<size_t> split_min_max(std::span<const int64_t> lengths, int64_t parts) {
  const size_t n = lengths.size();
  TRIDENT_CHECK(parts >= 1 && static_cast<size_t>(parts) <= n, "{} parts of {} sequences", parts, n);
  std::vector<int64_t> prefix(n + 1, 0);
  for (size_t k = 0; k < n; ++k) prefix[k + 1] = prefix[k] + lengths[k];
  constexpr int64_t kInf = std::numeric_limits<int64_t>::max();
  // best[i][k]: the smallest largest-chunk sum of the first k sequences in i chunks (each non-empty); cut[i][k] the
  // start of the last chunk.
  std::vector<std::vector<int64_t>> best(parts + 1, std::vector<int64_t>(n + 1, kInf));
  std::vector<std::vector<size_t>> cut(parts + 1, std::vector<size_t>(n + 1, 0));
  for (size_t k = 1; k <= n; ++k) best[1][k] = prefix[k];
  for (int64_t i = 2; i <= parts; ++i) {
    for (size_t k = static_cast<size_t>(i); k <= n; ++k) {
      // j in [i-1, k-1]: the last chunk is (j, k]. best[i-1][j] rises with j, prefix[k] - prefix[j] falls.
      size_t lo = static_cast<size_t>(i - 1), hi = k - 1;
      while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (best[i - 1][mid] >= prefix[k] - prefix[mid]) hi = mid; else lo = mid + 1;
      }
      for (size_t j : {lo, lo > static_cast<size_t>(i - 1) ? lo - 1 : lo}) {
        int64_t value = std::max(best[i - 1][j], prefix[k] - prefix[j]);
        if (value < best[i][k]) best[i][k] = value, cut[i][k] = j;
      }
    }
  }
  std::vector<size_t> bounds(parts + 1);
  bounds[parts] = n;
  for (int64_t i = parts; i >= 1; --i) bounds[i - 1] = i == 1 ? 0 : cut[i][bounds[i]];
  return bounds;
}

}  // namespace trident::flexsp
