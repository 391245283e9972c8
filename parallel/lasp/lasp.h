#pragma once
// LASP: sequence parallelism for causal linear attention with decay (docs/methods.md §1–§2; README.md in this
// folder).
//
// An SP group of T ranks (a Communicator) jointly holds one packed batch of N tokens. The global cu_seqlens is the
// same on every rank; rank t holds the contiguous tokens [shard_begin(N,T,t), shard_begin(N,T,t+1)) (the layout
// every sequence-parallel method shares, parallel/sp/shard.h), so it may hold the tail of one document, whole
// documents and the head of another, and a document may span several ranks.
// Each rank computes its tokens with the single-rank kernel from a zero state, then exchanges fp32 D x D states
// (one per head) of the ONE document crossing each rank boundary: LASP-1 passes them along a ring (prev = rank-1,
// next = rank+1, no wrap), LASP-2 allgathers every rank's boundary state and combines them locally. The result
// equals the single-rank kernel on the whole batch up to fp32 rounding; a 1-rank group runs the kernel itself.
//
// Layouts (local to a rank, n_local = its token count, C = H*D):
//   qkv_local  (n_local, 3C)   [q | k | v] rows of this rank's tokens
//   out        (n_local, C)
//   slopes     (H)             decay slope s_h (lambda_h = exp(-s_h))
//   states     (H, D, D)       fp32, every message and cached state
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "parallel/comm/communicator.h"

namespace trident {

enum class LaspVariant : uint8_t { lasp1, lasp2 };  // the state passed rank to rank; allgathered
const char* lasp_variant_name(LaspVariant variant);   // "lasp1", "lasp2"

// One rank's view of the packed batch.
struct LaspShard {
  int64_t begin = 0, end = 0;       // global token range [begin, end)
  std::vector<int32_t> cu_seqlens;  // local pieces (non-empty document pieces), offsets from `begin`
  int first_doc = -1;               // global document of local piece 0 (-1 when the rank holds no token)
  bool from_prev = false;           // a document crosses the boundary at `begin`: receive its state
  bool to_next = false;             // a document crosses the boundary at `end`: send its state
  // The rank lies inside one document crossing both boundaries (also an empty rank between two halves): the
  // incoming state passes through with decay lambda^n_local.
  bool pass_through() const { return from_prev && to_next && n_pieces() <= 1; }
  int n_pieces() const { return int(cu_seqlens.size()) - 1; }
  int64_t n_local() const { return end - begin; }
  std::string describe() const;  // "tokens [37, 74) pieces 2 from_prev 1 to_next 0"
};

// The shard of group rank `rank` of T from the global cu_seqlens (n_seq documents, N tokens; empty documents allowed).
LaspShard lasp_shard(const int32_t* cu_seqlens, int n_seq, int64_t N, int T, int rank);

// What forward keeps for backward: the plan and the received state (the LASP "KV cache"). States are combined
// and sent from host memory (they are small: H*D*D fp32); the kernels read their inputs in the backend's memory.
struct LaspCache {
  explicit LaspCache(Backend& backend)
      : cu_on_backend(backend), state_on_backend(backend), dstate_on_backend(backend), rows(backend) {}
  LaspShard shard;
  int H = 0, D = 0, chunk = 0;
  std::vector<float> slopes;       // (H) host copy
  std::vector<float> state_in;     // (H, D, D): state entering local piece 0 (zeros unless shard.from_prev)
  std::vector<float> transitions;  // (T, H) allgather only: per rank, lambda^n when it passes through, else 0
  // In the backend's memory: the local cu_seqlens and the slopes (the caller's, which outlive the step), and staging
  // for states and decayed rows, reused by every call.
  BackendArray<int32_t> cu_on_backend;
  const float* slopes_on_backend = nullptr;
  mutable BackendArray<float> state_on_backend, dstate_on_backend, rows;
};

// The sequence-parallel op. Backward must follow a forward on the same batch (it reads the cache).
class LinearAttentionSP {
 public:
  // qkv, out and their gradients, slopes and the kernels live in `backend` (cpu or cuda); states move through the
  // host and `sp` (MPI).
  LinearAttentionSP(Communicator& sp, Backend& backend, LaspVariant variant);

  void forward(float* out, const float* qkv_local, const float* slopes, const int32_t* cu_seqlens, int n_seq,
               int64_t N, int H, int D, int chunk);
  // Accumulates into dqkv_local (n_local, 3C).
  void backward(float* dqkv_local, const float* dout_local, const float* qkv_local);

  const LaspCache& cache() const { return cache_; }
  std::string describe() const;  // "lasp1 sp=4 rank=1 tokens [37, 74) ..."

 private:
  Communicator& sp_;
  Backend& backend_;
  LaspVariant variant_;
  LaspCache cache_;
};

}  // namespace trident
