// Which tokens and document pieces a rank of the SP group holds, and which of its boundaries a document crosses.
// Every rank derives every other rank's shard from the same global cu_seqlens, so both sides of a boundary agree
// on whether a state crosses it without any message.
#include <algorithm>

#include <fmt/format.h>

#include "kernels/common/error.h"
#include "parallel/lasp/lasp.h"
#include "parallel/sp/shard.h"

namespace trident {

namespace {

// A document crosses position p when it has tokens on both sides: cu[d] < p < cu[d+1].
bool crossed(const int32_t* cu_seqlens, int n_seq, int64_t p) {
  const int32_t* after = std::upper_bound(cu_seqlens, cu_seqlens + n_seq + 1, p);  // first offset > p
  if (after == cu_seqlens || after == cu_seqlens + n_seq + 1) return false;
  return *(after - 1) < p;
}

}  // namespace

const char* lasp_variant_name(LaspVariant variant) {
  return variant == LaspVariant::lasp1 ? "lasp1" : "lasp2";
}


LaspShard lasp_shard(const int32_t* cu_seqlens, int n_seq, int64_t N, int T, int rank) {
  TRIDENT_CHECK(T >= 1 && rank >= 0 && rank < T && n_seq >= 0, "T={} rank={} n_seq={}", T, rank, n_seq);
  TRIDENT_CHECK(cu_seqlens[0] == 0 && cu_seqlens[n_seq] == N, "cu_seqlens spans [{}, {}), N={}", cu_seqlens[0],
                cu_seqlens[n_seq], N);
  LaspShard s;
  s.begin = shard_begin(N, T, rank);
  s.end = shard_begin(N, T, rank + 1);
  s.cu_seqlens = {0};
  for (int d = 0; d < n_seq; ++d) {
    const int64_t lo = std::max<int64_t>(cu_seqlens[d], s.begin), hi = std::min<int64_t>(cu_seqlens[d + 1], s.end);
    if (hi <= lo) continue;
    if (s.first_doc < 0) s.first_doc = d;
    s.cu_seqlens.push_back(int32_t(hi - s.begin));
  }
  s.from_prev = crossed(cu_seqlens, n_seq, s.begin);
  s.to_next = crossed(cu_seqlens, n_seq, s.end);
  return s;
}

std::string LaspShard::describe() const {
  return fmt::format("tokens [{}, {}) pieces {} from_prev {} to_next {}", begin, end, n_pieces(), int(from_prev),
                     int(to_next));
}

}  // namespace trident
