#pragma once
// The math of Ring Attention, apart from its messaging (ring_attention.cpp): causal softmax attention of one
// rank's query rows against one block of keys and values, with document masking by global token position. A query
// at position p attends to keys at positions [doc_begin(p), p], an interval, so each row of a block has one
// contiguous range of visible keys (possibly empty). Partial results merge by online softmax
// (kernels/shared/online_softmax.h), in any block order.
//
// Layouts, C = H*D, head h at columns h*D..h*D+D-1 of each part:
//   queries  q rows with stride ld (the q part of a local qkv (n, 3C)), doc_begin (n)
//   keys     kv (n_k, 2C) = [k | v]
//   m, l     (H, n) running max and sum per query row and head; acc (n, C) the unnormalised output
//   lse      (H, n)
#include <cstdint>
#include <vector>

namespace trident {

struct QueryRows {
  const float* q;
  int64_t ld;                 // row stride of q
  int64_t n;                  // rows
  int64_t pos0;               // global position of row 0
  const int64_t* doc_begin;   // (n) global position of the first token of each row's document
};

struct KeyBlock {
  const float* kv;  // (n, 2C) [k | v]
  int64_t n;
  int64_t pos0;  // global position of row 0
};

// The running online-softmax state of n query rows.
struct OnlineSoftmaxRows {
  std::vector<float> m, l, acc;
  void reset(int64_t n, int H, int D);  // m = -inf, l = 0, acc = 0
};

// Folds one key block into the state.
void ring_block_forward(OnlineSoftmaxRows& state, const QueryRows& rows, const KeyBlock& keys, int H, int D);
// out (n, C) = acc / l and lse (H, n) = m + log l. Every query sees at least itself, so l > 0 once its own
// rank's block has been folded in.
void ring_block_finish(float* out, float* lse, const OnlineSoftmaxRows& state, int64_t n, int H, int D);

// delta (H, n): rowsum(dout * out) per head, the softmax backward's correction term.
std::vector<float> softmax_delta(const float* out, const float* dout, int64_t n, int H, int D);

// Gradients of one key block, probabilities recomputed from lse: accumulates into dq (stride ld_dq, the q part of
// a local dqkv) and into dkv (n_k, 2C) = [dk | dv]. dout (n, C).
void ring_block_backward(float* dq, int64_t ld_dq, float* dkv, const QueryRows& rows, const float* dout,
                         const float* lse, const float* delta, const KeyBlock& keys, int H, int D);

}  // namespace trident
