#include "parallel/sp/shard.h"

#include "kernels/common/error.h"

namespace trident {

void SpBatch::check(const char* op) const {
  if (H <= 0 || D <= 0 || n_seq < 0)
    throw_runtime_error("{}: needs H > 0, D > 0, n_seq >= 0 (got H={}, D={}, n_seq={})", op, H, D, n_seq);
  if (cu_seqlens[0] != 0 || cu_seqlens[n_seq] != N)
    throw_runtime_error("{}: cu_seqlens must run from 0 to N={} (got {} .. {})", op, N, cu_seqlens[0],
                        cu_seqlens[n_seq]);
}

std::vector<int64_t> shard_bounds(int64_t N, int T) {
  std::vector<int64_t> bounds(T + 1);
  for (int t = 0; t <= T; ++t) bounds[t] = shard_begin(N, T, t);
  return bounds;
}

std::vector<int64_t> document_begins(const SpBatch& batch, int64_t begin, int64_t end) {
  std::vector<int64_t> doc_begin;
  doc_begin.reserve(end - begin);
  int s = 0;
  for (int64_t p = begin; p < end; ++p) {
    while (batch.cu_seqlens[s + 1] <= p) ++s;  // empty documents are skipped too
    doc_begin.push_back(batch.cu_seqlens[s]);
  }
  return doc_begin;
}

}  // namespace trident
