#pragma once
// Causal softmax attention of n query rows against one block of keys and values, with document masking by global
// token position: the math of Ring Attention (parallel/sp/ring_attention.cpp), apart from its messaging. A query
// at position p attends to keys at positions [doc_begin(p), p], an interval, so each row of a block has one
// contiguous range of visible keys (possibly empty). Partial results merge by online softmax
// (kernels/shared/online_softmax.h), in any block order. fp32 only.
//
// Layouts, C = H*D, head h at columns h*D..h*D+D-1 of each part:
//   q          (n, ld_q)  query rows (the q part of a local qkv (n, 3C) has ld_q = 3C), global positions q_pos0..
//   doc_begin  (n)        int64 global position of the first token of each query's document
//   kv         (n_k, 2C)  [k | v], global positions k_pos0..
//   m, l       (H, n)     running max and sum per query row and head; acc (n, C) the unnormalised output.
//                         Start from m = -inf, l = 0, acc = 0.
//   out (n, C), lse (H, n), delta (H, n), dout (n, C), dkv (n_k, 2C) = [dk | dv]
#include <cstdint>

namespace trident::cpu {

// Folds one key block into the running state (m, l, acc).
void attention_block_forward(float* m, float* l, float* acc, const float* q, int64_t ld_q, int64_t n,
                             int64_t q_pos0, const int64_t* doc_begin, const float* kv, int64_t n_k, int64_t k_pos0,
                             int H, int D);

// out = acc / l and lse = m + log l. Every query sees at least itself, so l > 0 once its own block has been folded.
void attention_block_finish(float* out, float* lse, const float* m, const float* l, const float* acc, int64_t n,
                            int H, int D);

// delta = rowsum(dout * out) per head, the softmax backward's correction term.
void attention_block_delta(float* delta, const float* out, const float* dout, int64_t n, int H, int D);

// Gradients of one key block, probabilities recomputed from lse: accumulates into dq (stride ld_dq, e.g. the q
// part of a local dqkv) and into dkv.
void attention_block_backward(float* dq, int64_t ld_dq, float* dkv, const float* q, int64_t ld_q, int64_t n,
                              int64_t q_pos0, const int64_t* doc_begin, const float* dout, const float* lse,
                              const float* delta, const float* kv, int64_t n_k, int64_t k_pos0, int H, int D);

}  // namespace trident::cpu
