#include "parallel/sp/ulysses.h"

#include <algorithm>

#include "core/common/error.h"
#include "kernels/backend.h"

namespace trident {

namespace {

// This rank's part of the head split: heads [t*Hl, (t+1)*Hl) of every token.
struct HeadSplit {
  int T, t, Hl;
  int64_t C, Cl, n_local;
  std::vector<int64_t> bounds;  // token shards
};

HeadSplit split_heads(Communicator& comm, const SpBatch& batch, const char* op) {
  batch.check(op);
  const int T = comm.size();
  if (batch.H % T != 0)
    throw_runtime_error("{}: DeepSpeed-Ulysses shards heads, so the head count H={} must be divisible by the "
                        "sequence-parallel size T={}",
                        op, batch.H, T);
  HeadSplit s{T, comm.rank(), batch.H / T, batch.C(), batch.C() / T, 0, shard_bounds(batch.N, T)};
  s.n_local = s.bounds[s.t + 1] - s.bounds[s.t];
  return s;
}

// Sequence-sharded x (n_local, parts*C) -> head-sharded y (N, parts*Cl). The block for rank r is this rank's rows
// with r's head columns of each part; the blocks received land in token order, which is already y's layout.
void to_heads(Communicator& comm, const HeadSplit& s, const float* x, int parts, float* y) {
  const int64_t row = parts * s.Cl;  // elements per token of one rank's block
  if (s.T == 1) {  // the layouts coincide
    std::copy(x, x + s.n_local * row, y);
    return;
  }
  std::vector<float> send(s.T * s.n_local * row);
#pragma omp parallel for collapse(2)
  for (int r = 0; r < s.T; ++r)
    for (int64_t i = 0; i < s.n_local; ++i)
      for (int p = 0; p < parts; ++p) {
        const float* src = x + i * parts * s.C + p * s.C + r * s.Cl;
        std::copy(src, src + s.Cl, send.data() + (r * s.n_local + i) * row + p * s.Cl);
      }
  std::vector<int64_t> send_counts(s.T), send_displs(s.T), recv_counts(s.T), recv_displs(s.T);
  for (int r = 0; r < s.T; ++r) {
    send_counts[r] = s.n_local * row;
    send_displs[r] = r * s.n_local * row;
    recv_counts[r] = (s.bounds[r + 1] - s.bounds[r]) * row;
    recv_displs[r] = s.bounds[r] * row;
  }
  comm.alltoallv(send.data(), send_counts, send_displs, y, recv_counts, recv_displs, CommType::f32);
}

// Head-sharded y (N, parts*Cl) -> sequence-sharded x (n_local, parts*C): the reverse of to_heads. Rank r's tokens
// are a contiguous row range of y, so they are sent in place. Accumulates into x when `accumulate`.
void to_sequence(Communicator& comm, const HeadSplit& s, const float* y, int parts, float* x, bool accumulate) {
  const int64_t row = parts * s.Cl;
  if (s.T == 1) {
    for (int64_t i = 0; i < s.n_local * row; ++i) x[i] = accumulate ? x[i] + y[i] : y[i];
    return;
  }
  std::vector<float> recv(s.T * s.n_local * row);
  std::vector<int64_t> send_counts(s.T), send_displs(s.T), recv_counts(s.T), recv_displs(s.T);
  for (int r = 0; r < s.T; ++r) {
    send_counts[r] = (s.bounds[r + 1] - s.bounds[r]) * row;
    send_displs[r] = s.bounds[r] * row;
    recv_counts[r] = s.n_local * row;
    recv_displs[r] = r * s.n_local * row;
  }
  comm.alltoallv(y, send_counts, send_displs, recv.data(), recv_counts, recv_displs, CommType::f32);
#pragma omp parallel for collapse(2)
  for (int r = 0; r < s.T; ++r)
    for (int64_t i = 0; i < s.n_local; ++i)
      for (int p = 0; p < parts; ++p) {
        const float* src = recv.data() + (r * s.n_local + i) * row + p * s.Cl;
        float* dst = x + i * parts * s.C + p * s.C + r * s.Cl;
        for (int64_t c = 0; c < s.Cl; ++c) dst[c] = accumulate ? dst[c] + src[c] : src[c];
      }
}

}  // namespace

void ulysses_softmax_forward(Communicator& comm, float* out, UlyssesCache& cache, const float* qkv,
                             const SpBatch& batch) {
  const HeadSplit s = split_heads(comm, batch, "ulysses_softmax_forward");
  cache.qkv.resize(batch.N * 3 * s.Cl);
  cache.out.resize(batch.N * s.Cl);
  cache.lse.resize(int64_t(s.Hl) * batch.N);
  to_heads(comm, s, qkv, 3, cache.qkv.data());
  cpu_backend().attention_softmax_forward(cache.out.data(), cache.lse.data(), cache.qkv.data(), batch.cu_seqlens,
                                          batch.n_seq, batch.N, s.Hl, batch.D);
  to_sequence(comm, s, cache.out.data(), 1, out, false);
}

// In a 1-rank group the kernel accumulates straight into the caller's dqkv (the layouts coincide): adding a
// separately computed gradient would round differently from the single-rank path.
void ulysses_softmax_backward(Communicator& comm, float* dqkv, const float* dout, const UlyssesCache& cache,
                              const SpBatch& batch) {
  const HeadSplit s = split_heads(comm, batch, "ulysses_softmax_backward");
  std::vector<float> dout_h(batch.N * s.Cl), dqkv_h(s.T == 1 ? 0 : batch.N * 3 * s.Cl, 0.0f);
  to_heads(comm, s, dout, 1, dout_h.data());
  cpu_backend().attention_softmax_backward(s.T == 1 ? dqkv : dqkv_h.data(), dout_h.data(), cache.qkv.data(),
                                           cache.out.data(), cache.lse.data(), batch.cu_seqlens, batch.n_seq,
                                           batch.N, s.Hl, batch.D);
  if (s.T > 1) to_sequence(comm, s, dqkv_h.data(), 3, dqkv, true);
}

void ulysses_linear_forward(Communicator& comm, float* out, UlyssesCache& cache, const float* qkv,
                            const float* slopes, const SpBatch& batch, int chunk) {
  const HeadSplit s = split_heads(comm, batch, "ulysses_linear_forward");
  cache.qkv.resize(batch.N * 3 * s.Cl);
  cache.out.clear();
  cache.lse.clear();
  std::vector<float> out_h(batch.N * s.Cl);
  to_heads(comm, s, qkv, 3, cache.qkv.data());
  cpu_backend().attention_linear_forward(out_h.data(), nullptr, cache.qkv.data(), slopes + s.t * s.Hl, nullptr,
                                         batch.cu_seqlens, batch.n_seq, batch.N, s.Hl, batch.D, chunk);
  to_sequence(comm, s, out_h.data(), 1, out, false);
}

void ulysses_linear_backward(Communicator& comm, float* dqkv, const float* dout, const UlyssesCache& cache,
                             const float* slopes, const SpBatch& batch, int chunk) {
  const HeadSplit s = split_heads(comm, batch, "ulysses_linear_backward");
  std::vector<float> dout_h(batch.N * s.Cl), dqkv_h(s.T == 1 ? 0 : batch.N * 3 * s.Cl, 0.0f);
  to_heads(comm, s, dout, 1, dout_h.data());
  cpu_backend().attention_linear_backward(s.T == 1 ? dqkv : dqkv_h.data(), nullptr, dout_h.data(), nullptr,
                                          cache.qkv.data(), slopes + s.t * s.Hl, nullptr, batch.cu_seqlens,
                                          batch.n_seq, batch.N, s.Hl, batch.D, chunk);
  if (s.T > 1) to_sequence(comm, s, dqkv_h.data(), 3, dqkv, true);
}

SpTraffic ulysses_traffic(int64_t N, int T, int t, int H, int D) {
  if (T == 1) return {};
  const int64_t n = shard_size(N, T, t), C = int64_t(H) * D, Cl = C / T, f32 = 4;
  // forward: qkv (n, 3C) out, then out (N, C/T) back; backward: dout (n, C) out, then dqkv (N, 3C/T) back
  return {f32 * (3 * C * n + Cl * N), f32 * (C * n + 3 * Cl * N)};
}

}  // namespace trident
