#include "parallel/sp/ring_attention.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu/attention_block.h"

namespace trident {

namespace {

constexpr int kTagKv = 0x5201;   // K/V blocks
constexpr int kTagDkv = 0x5202;  // dK/dV accumulators

// Rank t's view of the ring. At step s it holds the K/V block of rank (t - s) mod T.
struct Ring {
  int T, t, next, prev;
  int64_t C;
  std::vector<int64_t> bounds;
  std::vector<int64_t> doc_begin;  // of the local queries

  Ring(Communicator& comm, const SpBatch& batch)
      : T(comm.size()),
        t(comm.rank()),
        next((t + 1) % T),
        prev((t + T - 1) % T),
        C(batch.C()),
        bounds(shard_bounds(batch.N, T)),
        doc_begin(document_begins(batch, bounds[t], bounds[t + 1])) {}
  int owner(int step) const { return ((t - step) % T + T) % T; }
  int64_t rows(int rank) const { return bounds[rank + 1] - bounds[rank]; }
  int64_t max_rows() const {
    int64_t n = 0;
    for (int r = 0; r < T; ++r) n = std::max(n, rows(r));
    return n;
  }
  // Blocks of later ranks hold only future tokens: every query of this rank masks them out.
  bool visible(int rank) const { return rank <= t; }
};

// The local [k | v] columns of qkv (n, 3C) as one contiguous (n, 2C) block, the unit that travels.
void pack_kv(float* kv, const float* qkv, int64_t n, int64_t C) {
  for (int64_t i = 0; i < n; ++i) std::copy(qkv + i * 3 * C + C, qkv + (i + 1) * 3 * C, kv + i * 2 * C);
}

}  // namespace

void ring_attention_forward(Communicator& comm, float* out, float* lse, const float* qkv, const SpBatch& batch) {
  batch.check("ring_attention_forward");
  if (comm.size() == 1) {
    cpu_backend().attention_softmax_forward(out, lse, qkv, batch.cu_seqlens, batch.n_seq, batch.N, batch.H,
                                            batch.D);
    return;
  }
  const Ring ring(comm, batch);
  const int64_t block = ring.max_rows() * 2 * ring.C;
  std::vector<float> kv(block), kv_next(block);
  pack_kv(kv.data(), qkv, ring.rows(ring.t), ring.C);
  const int64_t n = ring.rows(ring.t);
  std::vector<float> m(batch.H * n, -INFINITY), l(batch.H * n, 0.0f), acc(n * ring.C, 0.0f);  // online softmax

  for (int s = 0; s < ring.T; ++s) {
    const int o = ring.owner(s);
    RequestPtr exchange;  // block o on to the next rank, block o-1 in from the previous one
    if (s + 1 < ring.T)
      exchange = comm.isendrecv(kv.data(), ring.rows(o) * 2 * ring.C, ring.next, kv_next.data(),
                                ring.rows(ring.owner(s + 1)) * 2 * ring.C, ring.prev, CommType::f32, kTagKv);
    if (ring.visible(o))
      cpu::attention_block_forward(m.data(), l.data(), acc.data(), qkv, 3 * ring.C, n, ring.bounds[ring.t],
                                   ring.doc_begin.data(), kv.data(), ring.rows(o), ring.bounds[o], batch.H, batch.D);
    if (exchange) {
      exchange->wait();
      std::swap(kv, kv_next);
    }
  }
  cpu::attention_block_finish(out, lse, m.data(), l.data(), acc.data(), n, batch.H, batch.D);
}

// dK/dV of the block computed at step s-1 go on to the next rank while this rank computes step s into a zeroed
// buffer; the accumulator of step s's block arrives from the previous rank meanwhile and is added afterwards. So
// neither transfer waits for the compute that runs beside it.
void ring_attention_backward(Communicator& comm, float* dqkv, const float* dout, const float* qkv, const float* out,
                             const float* lse, const SpBatch& batch) {
  batch.check("ring_attention_backward");
  if (comm.size() == 1) {
    cpu_backend().attention_softmax_backward(dqkv, dout, qkv, out, lse, batch.cu_seqlens, batch.n_seq, batch.N,
                                             batch.H, batch.D);
    return;
  }
  const Ring ring(comm, batch);
  const int64_t n = ring.rows(ring.t), C = ring.C, block = ring.max_rows() * 2 * C;
  std::vector<float> delta(batch.H * n);
  cpu::attention_block_delta(delta.data(), out, dout, n, batch.H, batch.D);
  std::vector<float> kv(block), kv_next(block), dkv(block), dkv_in(block), dkv_done(block);
  pack_kv(kv.data(), qkv, n, C);

  for (int s = 0; s < ring.T; ++s) {
    const int o = ring.owner(s);
    RequestPtr kv_exchange, dkv_exchange;
    if (s + 1 < ring.T)
      kv_exchange = comm.isendrecv(kv.data(), ring.rows(o) * 2 * C, ring.next, kv_next.data(),
                                   ring.rows(ring.owner(s + 1)) * 2 * C, ring.prev, CommType::f32, kTagKv);
    if (s > 0)  // the finished accumulator of block o+1 out, block o's accumulator so far in
      dkv_exchange = comm.isendrecv(dkv_done.data(), ring.rows(ring.owner(s - 1)) * 2 * C, ring.next,
                                    dkv_in.data(), ring.rows(o) * 2 * C, ring.prev, CommType::f32, kTagDkv);
    std::fill(dkv.begin(), dkv.begin() + ring.rows(o) * 2 * C, 0.0f);
    if (ring.visible(o))
      cpu::attention_block_backward(dqkv, 3 * C, dkv.data(), qkv, 3 * C, n, ring.bounds[ring.t],
                                    ring.doc_begin.data(), dout, lse, delta.data(), kv.data(), ring.rows(o),
                                    ring.bounds[o], batch.H, batch.D);
    if (kv_exchange) {
      kv_exchange->wait();
      std::swap(kv, kv_next);
    }
    if (dkv_exchange) {
      dkv_exchange->wait();
      for (int64_t i = 0; i < ring.rows(o) * 2 * C; ++i) dkv[i] += dkv_in[i];
    }
    std::swap(dkv, dkv_done);
  }
  // The last hop: block t+1's accumulator goes home, and this rank's own comes back from the previous rank.
  comm.isendrecv(dkv_done.data(), ring.rows(ring.owner(ring.T - 1)) * 2 * C, ring.next, dkv_in.data(), n * 2 * C,
                 ring.prev, CommType::f32, kTagDkv)
      ->wait();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < 2 * C; ++c) dqkv[i * 3 * C + C + c] += dkv_in[i * 2 * C + c];
}

SpTraffic ring_attention_traffic(int64_t N, int T, int t, int H, int D) {
  if (T == 1) return {};
  const int64_t C = int64_t(H) * D, f32 = 4;
  // Forward sends every block but that of rank t+1 (the one it holds last); backward sends those K/V blocks
  // again, and every block's dK/dV accumulator once.
  const int64_t kv = 2 * C * (N - shard_size(N, T, (t + 1) % T));
  return {f32 * kv, f32 * (kv + 2 * C * N)};
}

}  // namespace trident
