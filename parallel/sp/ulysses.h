#pragma once
// DeepSpeed-Ulysses (arXiv 2309.14509): an all-to-all turns "sequence-sharded, all heads" into "all tokens, H/T
// heads", the single-rank attention kernel runs on this rank's heads over the whole packed batch, and a second
// all-to-all turns the output back. Exact for any per-head attention, so it serves both attention types: softmax,
// and linear attention with the decay slopes of this rank's heads. Needs H % T == 0. Layout: parallel/sp/shard.h.
//
// Buffers live in the cache's backend's memory, and the kernels, packing and unpacking run on that backend; the
// communicator must take buffers of that memory (MPI for the CPU backend, NCCL for CUDA). Per rank, with
// n = n_local and C = H*D (fp32 elements):
//   forward   qkv (n, 3C) -> (N, 3C/T), attention, out (N, C/T) -> (n, C)
//   backward  dout (n, C) -> (N, C/T), attention backward, dqkv (N, 3C/T) -> (n, 3C), accumulated (+=)
#include <cstdint>

#include "kernels/backend.h"
#include "parallel/comm/communicator.h"
#include "parallel/sp/shard.h"

namespace trident {

// What forward keeps for backward, in the head-sharded layout: this rank's H/T heads over all N tokens, so
// backward needs no all-to-all of qkv again; and the message buffers every call reuses.
struct UlyssesCache {
  explicit UlyssesCache(Backend& on)
      : backend(on), cu_seqlens(on), qkv(on), out(on), lse(on), heads(on), grad_heads(on), message(on) {}
  Backend& backend;                // runs every kernel; holds every buffer
  BackendArray<int32_t> cu_seqlens;  // (n_seq + 1) the batch's, for the kernels
  BackendArray<float> qkv;     // (N, 3C/T)
  BackendArray<float> out;     // (N, C/T)   softmax only
  BackendArray<float> lse;     // (H/T, N)   softmax only
  BackendArray<float> heads;       // scratch (N, C/T): linear forward's output, backward's dout
  BackendArray<float> grad_heads;  // scratch (N, 3C/T): dqkv of this rank's heads
  BackendArray<float> message;     // scratch: one all-to-all's packed blocks
};

// qkv (n_local, 3C) -> out (n_local, C). Throws RuntimeError naming H and T unless T divides H.
void ulysses_softmax_forward(Communicator& comm, float* out, UlyssesCache& cache, const float* qkv,
                             const SpBatch& batch);
// dout (n_local, C); accumulates into dqkv (n_local, 3C).
void ulysses_softmax_backward(Communicator& comm, float* dqkv, const float* dout, UlyssesCache& cache,
                              const SpBatch& batch);

// slopes (H): the decay slopes of all heads; each rank uses those of its own heads. No state in or out: each
// document starts from a zero state (the whole document is on this rank). `chunk` as in attention_linear.h.
void ulysses_linear_forward(Communicator& comm, float* out, UlyssesCache& cache, const float* qkv,
                            const float* slopes, const SpBatch& batch, int chunk);
void ulysses_linear_backward(Communicator& comm, float* dqkv, const float* dout, UlyssesCache& cache,
                             const float* slopes, const SpBatch& batch, int chunk);

// Bytes rank t of T hands to the communicator (what its counters show; the block a rank keeps for itself is
// included, so (T-1)/T of it crosses the wire; a 1-rank group sends nothing). The same for both attention types.
SpTraffic ulysses_traffic(int64_t N, int T, int t, int H, int D);

}  // namespace trident
