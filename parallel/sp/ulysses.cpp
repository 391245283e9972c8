#include "parallel/sp/ulysses.h"

#include <vector>

#include "kernels/common/error.h"

namespace trident {

namespace {

// This rank's part of the head split: heads [t*Hl, (t+1)*Hl) of every token.
struct HeadSplit {
  int T, t, Hl;
  int64_t C, Cl, n_local;
  std::vector<int64_t> bounds;  // token shards
};

HeadSplit split_heads(Communicator& comm, int H, int D, std::vector<int64_t> bounds, const char* op) {
  const int T = comm.size();
  if (H % T != 0)
    throw_runtime_error("{}: DeepSpeed-Ulysses shards heads, so the head count H={} must be divisible by the "
                        "sequence-parallel size T={}",
                        op, H, T);
  TRIDENT_CHECK(static_cast<int>(bounds.size()) == T + 1, "{}: {} token bounds for {} ranks", op, bounds.size(), T);
  const int64_t C = int64_t(H) * D;
  HeadSplit s{T, comm.rank(), H / T, C, C / T, 0, std::move(bounds)};
  s.n_local = s.bounds[s.t + 1] - s.bounds[s.t];
  return s;
}

HeadSplit split_heads(Communicator& comm, const SpBatch& batch, const char* op) {
  batch.check(op);
  return split_heads(comm, batch.H, batch.D, shard_bounds(batch.N, comm.size()), op);
}

// The all-to-all's layout: rank r's block is n_local rows of `row` elements on the sequence-sharded side, and its
// token range of the head-sharded side.
struct Blocks {
  std::vector<int64_t> local_counts, local_displs, head_counts, head_displs;
};
Blocks blocks(const HeadSplit& s, int64_t row) {
  Blocks b;
  for (int r = 0; r < s.T; ++r) {
    b.local_counts.push_back(s.n_local * row);
    b.local_displs.push_back(r * s.n_local * row);
    b.head_counts.push_back((s.bounds[r + 1] - s.bounds[r]) * row);
    b.head_displs.push_back(s.bounds[r] * row);
  }
  return b;
}

// Sequence-sharded x (n_local, parts*C) -> head-sharded y (N, parts*Cl). The block for rank r is this rank's rows
// with r's head columns of each part; the blocks received land in token order, which is already y's layout.
template <class T>
void to_heads(Communicator& comm, UlyssesCacheOf<T>& cache, const HeadSplit& s, const T* x, int parts, T* y) {
  Backend& backend = cache.backend;
  const int64_t row = parts * s.Cl;  // elements per token of one rank's block
  if (s.T == 1) {  // the layouts coincide
    backend.copy_rows(y, row, x, row, s.n_local, row);
    return;
  }
  T* send = cache.message.data(s.T * s.n_local * row);
  for (int r = 0; r < s.T && s.n_local > 0; ++r)  // a rank without tokens has nothing to pack (and null buffers)
    for (int p = 0; p < parts; ++p)
      backend.copy_rows(send + r * s.n_local * row + p * s.Cl, row, x + p * s.C + r * s.Cl, parts * s.C, s.n_local,
                        s.Cl);
  const Blocks b = blocks(s, row);
  backend.synchronize();  // a device communicator runs on its own stream: the packing must be done
  comm.alltoallv(send, b.local_counts, b.local_displs, y, b.head_counts, b.head_displs, comm_type_of<T>());
}

// Head-sharded y (N, parts*Cl) -> sequence-sharded x (n_local, parts*C): the reverse of to_heads. Rank r's tokens
// are a contiguous row range of y, so they are sent in place. Accumulates into x when `accumulate`.
template <class T>
void to_sequence(Communicator& comm, UlyssesCacheOf<T>& cache, const HeadSplit& s, const T* y, int parts, T* x,
                 bool accumulate) {
  Backend& backend = cache.backend;
  const int64_t row = parts * s.Cl;
  using Unpack = void (Backend::*)(T*, int64_t, const T*, int64_t, int64_t, int64_t);
  const Unpack unpack = accumulate ? Unpack(&Backend::add_rows) : Unpack(&Backend::copy_rows);
  if (s.T == 1) {
    (backend.*unpack)(x, row, y, row, s.n_local, row);
    return;
  }
  T* recv = cache.message.data(s.T * s.n_local * row);
  const Blocks b = blocks(s, row);
  backend.synchronize();
  comm.alltoallv(y, b.head_counts, b.head_displs, recv, b.local_counts, b.local_displs, comm_type_of<T>());
  for (int r = 0; r < s.T && s.n_local > 0; ++r)
    for (int p = 0; p < parts; ++p)
      (backend.*unpack)(x + p * s.C + r * s.Cl, parts * s.C, recv + r * s.n_local * row + p * s.Cl, row, s.n_local,
                        s.Cl);
}

// The batch's boundaries in the backend's memory, where the kernels read them; forward uploads them for backward.
template <class T>
const int32_t* upload_boundaries(UlyssesCacheOf<T>& cache, const SpBatch& batch) {
  return cache.cu_seqlens.upload(batch.cu_seqlens, batch.n_seq + 1);
}

// dqkv of this rank's heads, zeroed for the kernel to accumulate into; in a 1-rank group the caller's dqkv itself
// (the layouts coincide): adding a separately computed gradient would round differently from the single-rank path.
template <class T>
T* head_gradient(UlyssesCacheOf<T>& cache, const HeadSplit& s, T* dqkv, int64_t N) {
  if (s.T == 1) return dqkv;
  T* g = cache.grad_heads.data(N * 3 * s.Cl);
  cache.backend.fill(g, N * 3 * s.Cl, 0.0f);
  return g;
}

}  // namespace

template <class T>
void ulysses_softmax_forward(Communicator& comm, T* out, UlyssesCacheOf<T>& cache, const T* qkv,
                             const SpBatch& batch) {
  const HeadSplit s = split_heads(comm, batch, "ulysses_softmax_forward");
  T* qkv_h = cache.qkv.data(batch.N * 3 * s.Cl);
  T* out_h = cache.out.data(batch.N * s.Cl);
  float* lse_h = cache.lse.data(int64_t(s.Hl) * batch.N);
  const int32_t* cu = upload_boundaries(cache, batch);
  to_heads(comm, cache, s, qkv, 3, qkv_h);
  cache.backend.attention_softmax_forward(out_h, lse_h, qkv_h, cu, batch.n_seq, batch.N, s.Hl,
                                          batch.D);
  to_sequence(comm, cache, s, out_h, 1, out, false);
}

template <class T>
void ulysses_softmax_backward(Communicator& comm, T* dqkv, const T* dout, UlyssesCacheOf<T>& cache,
                              const SpBatch& batch) {
  const HeadSplit s = split_heads(comm, batch, "ulysses_softmax_backward");
  T* dout_h = cache.heads.data(batch.N * s.Cl);
  T* dqkv_h = head_gradient(cache, s, dqkv, batch.N);
  to_heads(comm, cache, s, dout, 1, dout_h);
  cache.backend.attention_softmax_backward(dqkv_h, dout_h, cache.qkv.data(), cache.out.data(), cache.lse.data(),
                                           cache.cu_seqlens.data(), batch.n_seq, batch.N, s.Hl, batch.D);
  if (s.T > 1) to_sequence(comm, cache, s, dqkv_h, 3, dqkv, true);
}

template <class T>
void ulysses_linear_forward(Communicator& comm, T* out, UlyssesCacheOf<T>& cache, const T* qkv, const float* slopes,
                            const SpBatch& batch, int chunk) {
  const HeadSplit s = split_heads(comm, batch, "ulysses_linear_forward");
  T* qkv_h = cache.qkv.data(batch.N * 3 * s.Cl);
  T* out_h = cache.heads.data(batch.N * s.Cl);
  const int32_t* cu = upload_boundaries(cache, batch);
  to_heads(comm, cache, s, qkv, 3, qkv_h);
  cache.backend.attention_linear_forward(out_h, nullptr, qkv_h, slopes + s.t * s.Hl, nullptr, cu,
                                         batch.n_seq, batch.N, s.Hl, batch.D, chunk);
  to_sequence(comm, cache, s, out_h, 1, out, false);
}

template <class T>
void ulysses_linear_backward(Communicator& comm, T* dqkv, const T* dout, UlyssesCacheOf<T>& cache,
                             const float* slopes, const SpBatch& batch, int chunk) {
  const HeadSplit s = split_heads(comm, batch, "ulysses_linear_backward");
  T* dout_h = cache.heads.data(batch.N * s.Cl);
  T* dqkv_h = head_gradient(cache, s, dqkv, batch.N);
  to_heads(comm, cache, s, dout, 1, dout_h);
  cache.backend.attention_linear_backward(dqkv_h, nullptr, dout_h, nullptr, cache.qkv.data(), slopes + s.t * s.Hl,
                                          nullptr, cache.cu_seqlens.data(), batch.n_seq, batch.N, s.Hl, batch.D, chunk);
  if (s.T > 1) to_sequence(comm, cache, s, dqkv_h, 3, dqkv, true);
}

template <class T>
void ulysses_to_heads(Communicator& comm, UlyssesCacheOf<T>& cache, const std::vector<int64_t>& bounds, int H, int D,
                      const T* x, int parts, T* y) {
  to_heads(comm, cache, split_heads(comm, H, D, bounds, "ulysses_to_heads"), x, parts, y);
}

template <class T>
void ulysses_to_sequence(Communicator& comm, UlyssesCacheOf<T>& cache, const std::vector<int64_t>& bounds, int H,
                         int D, const T* y, int parts, T* x, bool accumulate) {
  to_sequence(comm, cache, split_heads(comm, H, D, bounds, "ulysses_to_sequence"), y, parts, x, accumulate);
}

SpTraffic ulysses_traffic(int64_t N, int T, int t, int H, int D, int element_bytes) {
  if (T == 1) return {};
  const int64_t n = shard_size(N, T, t), C = int64_t(H) * D, Cl = C / T, e = element_bytes;
  // forward: qkv (n, 3C) out, then out (N, C/T) back; backward: dout (n, C) out, then dqkv (N, 3C/T) back
  return {e * (3 * C * n + Cl * N), e * (C * n + 3 * Cl * N)};
}

#define TRIDENT_ULYSSES_INSTANTIATE(T)                                                                           \
  template void ulysses_softmax_forward<T>(Communicator&, T*, UlyssesCacheOf<T>&, const T*, const SpBatch&);     \
  template void ulysses_softmax_backward<T>(Communicator&, T*, const T*, UlyssesCacheOf<T>&, const SpBatch&);    \
  template void ulysses_linear_forward<T>(Communicator&, T*, UlyssesCacheOf<T>&, const T*, const float*,         \
                                          const SpBatch&, int);                                                  \
  template void ulysses_linear_backward<T>(Communicator&, T*, const T*, UlyssesCacheOf<T>&, const float*,        \
                                           const SpBatch&, int);                                                  \
  template void ulysses_to_heads<T>(Communicator&, UlyssesCacheOf<T>&, const std::vector<int64_t>&, int, int,    \
                                    const T*, int, T*);                                                          \
  template void ulysses_to_sequence<T>(Communicator&, UlyssesCacheOf<T>&, const std::vector<int64_t>&, int, int, \
                                       const T*, int, T*, bool);
TRIDENT_ULYSSES_INSTANTIATE(float)
TRIDENT_ULYSSES_INSTANTIATE(bf16)
#undef TRIDENT_ULYSSES_INSTANTIATE

}  // namespace trident
