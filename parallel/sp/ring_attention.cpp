#include "parallel/sp/ring_attention.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <utility>
#include <vector>

namespace trident {

namespace {

constexpr int kTagKv = 0x5201;   // K/V blocks
constexpr int kTagDkv = 0x5202;  // dK/dV accumulators

// Rank t's view of the ring. At step s it holds the K/V block of rank (t - s) mod T.
struct Ring {
  int T, t, next, prev;
  int64_t C;
  std::vector<int64_t> bounds;

  Ring(Communicator& comm, const SpBatch& batch)
      : T(comm.size()),
        t(comm.rank()),
        next((t + 1) % T),
        prev((t + T - 1) % T),
        C(batch.C()),
        bounds(shard_bounds(batch.N, T)) {}
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

// Where each local query's document begins, in the backend's memory where the block kernels read it.
const int64_t* upload_doc_begin(RingCache& cache, const Ring& ring, const SpBatch& batch) {
  const std::vector<int64_t> begins = document_begins(batch, ring.bounds[ring.t], ring.bounds[ring.t + 1]);
  return cache.doc_begin.upload(begins.data(), int64_t(begins.size()));
}

// The local [k | v] columns of qkv (n, 3C) as one contiguous (n, 2C) block, the unit that travels.
template <class T>
void pack_kv(Backend& backend, T* kv, const T* qkv, int64_t n, int64_t C) {
  if (n == 0) return;  // a rank without tokens: nothing to pack, and qkv may be null
  backend.copy_rows(kv, 2 * C, qkv + C, 3 * C, n, 2 * C);
}

// The K/V message buffers for activations of type T. bf16 blocks are widened into cache.kv, sized here for the
// largest block, so it never grows in the middle of the ring.
template <class T>
std::pair<T*, T*> kv_messages(RingCache& cache, int64_t block) {
  cache.kv.data(block);
  if constexpr (std::is_same_v<T, bf16>)
    return {cache.kv_bf16.data(block), cache.kv_bf16_next.data(block)};
  else
    return {cache.kv.data(block), cache.kv_next.data(block)};
}

// x as fp32 for the block ops: x itself, or for bf16 its exact copy in `wide`.
template <class T>
const float* widened(Backend& backend, BackendArray<float>& wide, const T* x, int64_t n) {
  if constexpr (std::is_same_v<T, bf16>) {
    float* w = wide.data(n);
    backend.convert(w, x, n);
    return w;
  } else {
    return x;
  }
}

// Where the block ops write a result of type T: the caller's buffer, or for bf16 an fp32 copy of it (widened first
// when `keep`, to accumulate into) that narrowed() rounds back.
template <class T>
float* wide_output(Backend& backend, BackendArray<float>& wide, T* x, int64_t n, bool keep) {
  if constexpr (std::is_same_v<T, bf16>) {
    float* w = wide.data(n);
    if (keep) backend.convert(w, x, n);
    return w;
  } else {
    return x;
  }
}
template <class T>
void narrowed(Backend& backend, T* x, const float* w, int64_t n) {
  if constexpr (std::is_same_v<T, bf16>) backend.convert(x, w, n);
}

}  // namespace

// Before each exchange the backend synchronizes: a device communicator runs on its own stream, so what it sends must
// be written, and the compute of the previous step must be done reading the buffer it is about to overwrite (the
// one swapped out). wait() returns once the transfer is complete, so the received block is ready to compute on.
template <class T>
void ring_attention_forward(Communicator& comm, RingCache& cache, T* out, float* lse, const T* qkv,
                            const SpBatch& batch) {
  batch.check("ring_attention_forward");
  Backend& backend = cache.backend;
  if (comm.size() == 1) {
    const int32_t* cu = cache.cu_seqlens.upload(batch.cu_seqlens, batch.n_seq + 1);
    backend.attention_softmax_forward(out, lse, qkv, cu, batch.n_seq, batch.N, batch.H, batch.D);
    return;
  }
  const Ring ring(comm, batch);
  const int64_t n = ring.rows(ring.t), C = ring.C, block = ring.max_rows() * 2 * C;
  const int64_t* doc_begin = upload_doc_begin(cache, ring, batch);
  auto [kv, kv_next] = kv_messages<T>(cache, block);
  pack_kv(backend, kv, qkv, n, C);
  const float* q = widened(backend, cache.wide_qkv, qkv, n * 3 * C);
  // online softmax
  float* m = cache.m.data(batch.H * n);
  float* l = cache.l.data(batch.H * n);
  float* acc = cache.acc.data(n * C);
  backend.fill(m, batch.H * n, -INFINITY);
  backend.fill(l, batch.H * n, 0.0f);
  backend.fill(acc, n * C, 0.0f);

  for (int s = 0; s < ring.T; ++s) {
    const int o = ring.owner(s);
    RequestPtr exchange;  // block o on to the next rank, block o-1 in from the previous one
    if (s + 1 < ring.T) {
      backend.synchronize();
      exchange = comm.isendrecv(kv, ring.rows(o) * 2 * C, ring.next, kv_next, ring.rows(ring.owner(s + 1)) * 2 * C,
                                ring.prev, comm_type_of<T>(), kTagKv);
    }
    if (ring.visible(o)) {
      const float* keys = widened(backend, cache.kv, kv, ring.rows(o) * 2 * C);
      backend.attention_block_forward(m, l, acc, q, 3 * C, n, ring.bounds[ring.t], doc_begin, keys, ring.rows(o),
                                      ring.bounds[o], batch.H, batch.D);
    }
    if (exchange) {
      exchange->wait();
      std::swap(kv, kv_next);
    }
  }
  float* out32 = wide_output(backend, cache.wide_out, out, n * C, false);
  backend.attention_block_finish(out32, lse, m, l, acc, n, batch.H, batch.D);
  narrowed(backend, out, out32, n * C);
}

// dK/dV of the block computed at step s-1 go on to the next rank while this rank computes step s into a zeroed
// buffer; the accumulator of step s's block arrives from the previous rank meanwhile and is added afterwards. So
// neither transfer waits for the compute that runs beside it.
template <class T>
void ring_attention_backward(Communicator& comm, RingCache& cache, T* dqkv, const T* dout, const T* qkv, const T* out,
                             const float* lse, const SpBatch& batch) {
  batch.check("ring_attention_backward");
  Backend& backend = cache.backend;
  if (comm.size() == 1) {
    const int32_t* cu = cache.cu_seqlens.upload(batch.cu_seqlens, batch.n_seq + 1);
    backend.attention_softmax_backward(dqkv, dout, qkv, out, lse, cu, batch.n_seq, batch.N, batch.H, batch.D);
    return;
  }
  const Ring ring(comm, batch);
  const int64_t n = ring.rows(ring.t), C = ring.C, block = ring.max_rows() * 2 * C;
  const int64_t* doc_begin = upload_doc_begin(cache, ring, batch);
  const float* q = widened(backend, cache.wide_qkv, qkv, n * 3 * C);
  const float* o32 = widened(backend, cache.wide_out, out, n * C);
  const float* dout32 = widened(backend, cache.wide_dout, dout, n * C);
  float* dqkv32 = wide_output(backend, cache.wide_dqkv, dqkv, n * 3 * C, true);
  float* delta = cache.delta.data(batch.H * n);
  backend.attention_block_delta(delta, o32, dout32, n, batch.H, batch.D);
  auto [kv, kv_next] = kv_messages<T>(cache, block);
  float* dkv = cache.dkv.data(block);
  float* dkv_in = cache.dkv_in.data(block);
  float* dkv_done = cache.dkv_done.data(block);
  pack_kv(backend, kv, qkv, n, C);

  for (int s = 0; s < ring.T; ++s) {
    const int o = ring.owner(s);
    RequestPtr kv_exchange, dkv_exchange;
    backend.synchronize();  // every step posts at least one exchange (T > 1)
    if (s + 1 < ring.T)
      kv_exchange = comm.isendrecv(kv, ring.rows(o) * 2 * C, ring.next, kv_next, ring.rows(ring.owner(s + 1)) * 2 * C,
                                   ring.prev, comm_type_of<T>(), kTagKv);
    if (s > 0)  // the finished accumulator of block o+1 out, block o's accumulator so far in
      dkv_exchange = comm.isendrecv(dkv_done, ring.rows(ring.owner(s - 1)) * 2 * C, ring.next, dkv_in,
                                    ring.rows(o) * 2 * C, ring.prev, CommType::f32, kTagDkv);
    backend.fill(dkv, ring.rows(o) * 2 * C, 0.0f);
    if (ring.visible(o)) {
      const float* keys = widened(backend, cache.kv, kv, ring.rows(o) * 2 * C);
      backend.attention_block_backward(dqkv32, 3 * C, dkv, q, 3 * C, n, ring.bounds[ring.t], doc_begin, dout32, lse,
                                       delta, keys, ring.rows(o), ring.bounds[o], batch.H, batch.D);
    }
    if (kv_exchange) {
      kv_exchange->wait();
      std::swap(kv, kv_next);
    }
    if (dkv_exchange) {
      dkv_exchange->wait();
      backend.add_rows(dkv, 2 * C, dkv_in, 2 * C, ring.rows(o), 2 * C);
    }
    std::swap(dkv, dkv_done);
  }
  // The last hop: block t+1's accumulator goes home, and this rank's own comes back from the previous rank.
  backend.synchronize();
  comm.isendrecv(dkv_done, ring.rows(ring.owner(ring.T - 1)) * 2 * C, ring.next, dkv_in, n * 2 * C, ring.prev,
                 CommType::f32, kTagDkv)
      ->wait();
  if (n > 0) backend.add_rows(dqkv32 + C, 3 * C, dkv_in, 2 * C, n, 2 * C);  // with no tokens dqkv32 may be null
  narrowed(backend, dqkv, dqkv32, n * 3 * C);
}

template void ring_attention_forward<float>(Communicator&, RingCache&, float*, float*, const float*, const SpBatch&);
template void ring_attention_forward<bf16>(Communicator&, RingCache&, bf16*, float*, const bf16*, const SpBatch&);
template void ring_attention_backward<float>(Communicator&, RingCache&, float*, const float*, const float*,
                                             const float*, const float*, const SpBatch&);
template void ring_attention_backward<bf16>(Communicator&, RingCache&, bf16*, const bf16*, const bf16*, const bf16*,
                                            const float*, const SpBatch&);

SpTraffic ring_attention_traffic(int64_t N, int T, int t, int H, int D, int kv_element_bytes) {
  if (T == 1) return {};
  const int64_t C = int64_t(H) * D, f32 = 4, e = kv_element_bytes;
  // Forward sends every block but that of rank t+1 (the one it holds last); backward sends those K/V blocks
  // again, and every block's dK/dV accumulator once.
  const int64_t kv = 2 * C * (N - shard_size(N, T, (t + 1) % T));
  return {e * kv, e * kv + f32 * 2 * C * N};
}

}  // namespace trident
