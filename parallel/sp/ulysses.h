#pragma once
// DeepSpeed-Ulysses (arXiv 2309.14509): an all-to-all turns "sequence-sharded, all heads" into "all tokens, H/T
// heads", the single-rank attention kernel runs on this rank's heads over the whole packed batch, and a second
// all-to-all turns the output back. Exact for any per-head attention, so it serves both attention types: softmax,
// and linear attention with the decay slopes of this rank's heads. Needs H % T == 0. Layout: parallel/sp/shard.h.
//
// Buffers live in the cache's backend's memory, and the kernels, packing and unpacking run on that backend; the
// communicator must take buffers of that memory (MPI for the CPU backend, NCCL for CUDA). Activations are of storage
// type T, float or bf16, and travel as T: in bf16 the messages are half the bytes, the kernels are the bf16 kernels
// (fp32 inside; lse stays fp32), and the gradient of this rank's heads is rounded to bf16 before it travels back and
// is added (rounded again) to dqkv. Per rank, with n = n_local and C = H*D (elements of T):
//   forward   qkv (n, 3C) -> (N, 3C/T), attention, out (N, C/T) -> (n, C)
//   backward  dout (n, C) -> (N, C/T), attention backward, dqkv (N, 3C/T) -> (n, 3C), accumulated (+=)
#include <cstdint>
#include <vector>

#include "kernels/backend.h"
#include "parallel/comm/communicator.h"
#include "parallel/sp/shard.h"

namespace trident {

// What forward keeps for backward, in the head-sharded layout: this rank's H/T heads over all N tokens, so
// backward needs no all-to-all of qkv again; and the message buffers every call reuses.
template <class T>
struct UlyssesCacheOf {
  explicit UlyssesCacheOf(Backend& on)
      : backend(on), cu_seqlens(on), qkv(on), out(on), lse(on), heads(on), grad_heads(on), message(on) {}
  Backend& backend;                  // runs every kernel; holds every buffer
  BackendArray<int32_t> cu_seqlens;  // (n_seq + 1) the batch's, for the kernels
  BackendArray<T> qkv;               // (N, 3C/T)
  BackendArray<T> out;               // (N, C/T)   softmax only
  BackendArray<float> lse;           // (H/T, N)   softmax only
  BackendArray<T> heads;             // scratch (N, C/T): linear forward's output, backward's dout
  BackendArray<T> grad_heads;        // scratch (N, 3C/T): dqkv of this rank's heads
  BackendArray<T> message;           // scratch: one all-to-all's packed blocks
};
using UlyssesCache = UlyssesCacheOf<float>;

// qkv (n_local, 3C) -> out (n_local, C). Throws RuntimeError naming H and T unless T divides H.
template <class T>
void ulysses_softmax_forward(Communicator& comm, T* out, UlyssesCacheOf<T>& cache, const T* qkv,
                             const SpBatch& batch);
// dout (n_local, C); accumulates into dqkv (n_local, 3C).
template <class T>
void ulysses_softmax_backward(Communicator& comm, T* dqkv, const T* dout, UlyssesCacheOf<T>& cache,
                              const SpBatch& batch);

// slopes (H): the decay slopes of all heads; each rank uses those of its own heads. No state in or out: each
// document starts from a zero state (the whole document is on this rank). `chunk` as in attention_linear.h.
template <class T>
void ulysses_linear_forward(Communicator& comm, T* out, UlyssesCacheOf<T>& cache, const T* qkv, const float* slopes,
                            const SpBatch& batch, int chunk);
template <class T>
void ulysses_linear_backward(Communicator& comm, T* dqkv, const T* dout, UlyssesCacheOf<T>& cache,
                             const float* slopes, const SpBatch& batch, int chunk);

// Ulysses' two exchanges on their own, for methods built on them (USP: parallel/sp/model_op.h), with the token shards
// given: rank r of `comm` holds rows [bounds[r], bounds[r+1]) of the head-sharded side (bounds[0] = 0, T + 1
// entries). to_heads: x (n_local, parts*C) -> y (bounds[T], parts*C/T); to_sequence the reverse, accumulating into
// x when `accumulate`. H must divide by T.
template <class T>
void ulysses_to_heads(Communicator& comm, UlyssesCacheOf<T>& cache, const std::vector<int64_t>& bounds, int H, int D,
                      const T* x, int parts, T* y);
template <class T>
void ulysses_to_sequence(Communicator& comm, UlyssesCacheOf<T>& cache, const std::vector<int64_t>& bounds, int H,
                         int D, const T* y, int parts, T* x, bool accumulate);

// Bytes rank t of T hands to the communicator (what its counters show; the block a rank keeps for itself is
// included, so (T-1)/T of it crosses the wire; a 1-rank group sends nothing), for elements of `element_bytes` (4 for
// fp32, 2 for bf16). The same for both attention types.
SpTraffic ulysses_traffic(int64_t N, int T, int t, int H, int D, int element_bytes = 4);

}  // namespace trident
