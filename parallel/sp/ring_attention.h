#pragma once
// Ring Attention (arXiv 2310.01889) for causal softmax attention over a packed batch, in the layout of
// parallel/sp/shard.h. Each rank keeps its queries; the K/V blocks of all ranks pass around the ring (isendrecv to
// group rank t+1, from t-1), the next exchange posted before computing on the current block so the transfer
// overlaps the compute, and partial results merge by online softmax. Masks are causal and per document by global
// token position (kernels/cpu/attention_block.h). Backward rotates K/V again together with their dK/dV accumulators,
// which travel with their blocks and come back to their owner after T steps, and recomputes probabilities from the
// saved lse.
//
// The signatures mirror kernels/cpu/attention_softmax.h with local buffers: qkv, dqkv (n_local, 3C), out, dout
// (n_local, C), lse (H, n_local). A 1-rank group runs the packed kernel itself (bit for bit the single-rank path).
// Buffers live in the cache's backend's memory, and the block math, packing and accumulation run on that backend;
// the communicator must take buffers of that memory (MPI for the CPU backend, NCCL for CUDA).
#include <cstdint>

#include "kernels/backend.h"
#include "parallel/comm/communicator.h"
#include "parallel/sp/shard.h"

namespace trident {

// The ring's buffers in the backend's memory, reused by every call. Nothing in it outlives a call: backward reads
// the caller's qkv, out and lse, and uploads the batch's boundaries again.
struct RingCache {
  explicit RingCache(Backend& on)
      : backend(on),
        cu_seqlens(on),
        doc_begin(on),
        kv(on),
        kv_next(on),
        kv_bf16(on),
        kv_bf16_next(on),
        dkv(on),
        dkv_in(on),
        dkv_done(on),
        m(on),
        l(on),
        acc(on),
        delta(on),
        wide_qkv(on),
        wide_out(on),
        wide_dout(on),
        wide_dqkv(on) {}
  Backend& backend;                  // runs every kernel; holds every buffer
  BackendArray<int32_t> cu_seqlens;  // (n_seq + 1) the batch's, for the packed kernel of a 1-rank group
  BackendArray<int64_t> doc_begin;   // (n_local) where each local query's document begins (document_begins)
  BackendArray<float> kv, kv_next;   // (n_max, 2C) the [k | v] block computed on, the one arriving
  BackendArray<bf16> kv_bf16, kv_bf16_next;  // (n_max, 2C) the same as messages, for bf16 activations
  BackendArray<float> dkv, dkv_in;   // (n_max, 2C) dK/dV: this step's, the one arriving
  BackendArray<float> dkv_done;      // (n_max, 2C) dK/dV: the one leaving
  BackendArray<float> m, l;          // (H, n_local) online softmax: running max and sum
  BackendArray<float> acc;           // (n_local, C) online softmax: unnormalised output
  BackendArray<float> delta;         // (H, n_local) rowsum(dout * out), for backward
  // bf16 activations only: their exact fp32 copies, which the block ops compute on
  BackendArray<float> wide_qkv, wide_out, wide_dout, wide_dqkv;
};

// T is the activations' storage type, float or bf16. bf16 K/V blocks travel as bf16 (half the bytes) and are widened
// on arrival; the block math is fp32 on exact copies of the bf16 activations, the dK/dV accumulators travel in fp32,
// and out and dqkv are rounded once at the end: the arithmetic of the bf16 kernels.
template <class T>
void ring_attention_forward(Communicator& comm, RingCache& cache, T* out, float* lse, const T* qkv,
                            const SpBatch& batch);

// Accumulates into dqkv. Needs the forward's out and lse.
template <class T>
void ring_attention_backward(Communicator& comm, RingCache& cache, T* dqkv, const T* dout, const T* qkv, const T* out,
                             const float* lse, const SpBatch& batch);

// Bytes rank t of T hands to the communicator: forward T-1 K/V blocks; backward the same plus T dK/dV hops (fp32).
// kv_element_bytes: 4 for fp32 activations, 2 for bf16.
SpTraffic ring_attention_traffic(int64_t N, int T, int t, int H, int D, int kv_element_bytes = 4);

}  // namespace trident
