#pragma once
// Causal softmax attention over a packed batch of variable-length sequences (FlashAttention-2 style on the CPU).
// Tiled over queries and keys with an online softmax, so memory is O(N) per head: the only saved statistic is
// the log-sum-exp of each query row, and backward recomputes the probabilities tile by tile.
//
// Layouts (see kernels/README.md):
//   qkv  (N, 3C)   [q | k | v], head h at columns h*D..h*D+D-1 of each part, C = H*D
//   out  (N, C)
//   lse  (H, N)    log-sum-exp over keys of the scaled scores of each query (scale = 1/sqrt(D))
// out[t, h] = sum_{j in seq(t), j <= t} softmax_j(q_t . k_j / sqrt(D)) v_j
#include <cstdint>

namespace trident::cpu {

void attention_softmax_forward(float* out, float* lse, const float* qkv, const int32_t* cu_seqlens, int n_seq,
                               int64_t N, int H, int D);

// Accumulates into dqkv (N, 3C). Needs the forward's out and lse.
void attention_softmax_backward(float* dqkv, const float* dout, const float* qkv, const float* out, const float* lse,
                                const int32_t* cu_seqlens, int n_seq, int64_t N, int H, int D);

}  // namespace trident::cpu
