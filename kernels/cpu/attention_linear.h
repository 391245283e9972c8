#pragma once
// Causal linear attention with a per-head decay (TransNormerLLM / Lightning Attention), chunked form:
// an intra-chunk masked left product plus an inter-chunk right product through the running KV state.
// No softmax and no normaliser inside the op. docs/methods.md §1, "Linear attention with decay", has the equations;
// this file follows them.
//
// Per sequence and head, with lambda = exp(-s_h) and the state S (D x D, fp32) convention of docs/methods.md §1
// (the state is weighted to the token *after* the last one it has seen):
//   o_i     = q_i . ( lambda^i S_in + sum_{j<=i} lambda^(i-j) k_j^T v_j )          (i, j local to the sequence)
//   S_out   = lambda^n S_in + sum_{j<n} lambda^(n-j) k_j^T v_j                     (n = sequence length)
// so running a sequence in two pieces and passing S_out of the first as S_in of the second equals one run.
// This is the hook sequence parallelism (LASP) uses: a rank's chunk takes the previous rank's state.
//
// Layouts:
//   qkv        (N, 3C)            [q | k | v] as in kernels/README.md, C = H*D
//   slopes     (H)                decay slope s_h > 0 (lambda_h = exp(-s_h))
//   state_in   (n_seq, H, D, D)   initial state of each sequence, or nullptr for zeros
//   state_out  (n_seq, H, D, D)   final state of each sequence, or nullptr if not wanted
//   out        (N, C)
// `chunk` is the chunk length of the chunked form (any value >= 1; the result does not depend on it beyond
// rounding). Each sequence is chunked from its own start; its last chunk may be shorter.
#include <cstdint>

namespace trident::cpu {

void attention_linear_forward(float* out, float* state_out, const float* qkv, const float* slopes,
                              const float* state_in, const int32_t* cu_seqlens, int n_seq, int64_t N, int H, int D,
                              int chunk);

// Given dout (N, C) and dstate_out (n_seq, H, D, D; nullptr = zeros), accumulates into dqkv (N, 3C) and, when
// dstate_in is not nullptr, into dstate_in (n_seq, H, D, D). Recomputes the per-chunk states from qkv and state_in.
void attention_linear_backward(float* dqkv, float* dstate_in, const float* dout, const float* dstate_out,
                               const float* qkv, const float* slopes, const float* state_in,
                               const int32_t* cu_seqlens, int n_seq, int64_t N, int H, int D, int chunk);

}  // namespace trident::cpu
