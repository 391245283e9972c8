#pragma once
// Decay factors of causal linear attention with a per-head decay lambda = exp(-s) (docs/methods.md §1, chunked form,
// 0-indexed positions local to a chunk of length c), and the ALiBi rule that picks the slopes s.
//
// Every factor is exp(-s*m) with m >= 0: it lies in (0, 1] and at worst underflows to 0, which is correct (the far
// past is forgotten). The paper's key decay lambda^c * Lambda^-1 needs exp(+s*m), which overflows fp32 once
// s*m > 88.7 (s = 0.7071, the fastest head of H = 16, at c = 126): never form it.
#include <cmath>
#include <vector>

#include "kernels/shared/hd.h"

namespace trident {

// Query i of a chunk reads the incoming state (weighted to the chunk's first token) through i decay steps.
template <class T>
TRIDENT_HD T q_decay(T s, int i) {
  return std::exp(-s * T(i));
}

// Key j of a chunk of length c enters the outgoing state, which is weighted to the first token of the next chunk.
template <class T>
TRIDENT_HD T k_decay(T s, int j, int c) {
  return std::exp(-s * T(c - j));
}

// The incoming state crosses the whole chunk of length c.
template <class T>
TRIDENT_HD T block_decay(T s, int c) {
  return std::exp(-s * T(c));
}

// Row i of a block scaled by lambda^(offset + sign*i) (sign +1: rows read a state through i more steps; -1: rows
// enter a state that lies offset - i steps ahead). The exponent must stay >= 0.
template <class T>
TRIDENT_HD T row_decay(T s, int64_t offset, int sign, int64_t i) {
  return std::exp(-s * T(offset + sign * i));
}

// Causal mask times decay of the intra-chunk product, query i and key j: 0 above the diagonal (not -inf: no softmax).
template <class T>
TRIDENT_HD T diag_decay(T s, int i, int j) {
  return i >= j ? std::exp(-s * T(i - j)) : T(0);
}

// ALiBi slope of head h of H ("Train Short, Test Long"), as in the LASP / TNL code. For H a power of two,
// 2^(-8(h+1)/H); otherwise, with p = 2^floor(log2 H), the p slopes of that rule for p, then the even-indexed slopes
// of the rule for 2p, 2^(-(8j+4)/p) for j = 0..H-p-1.
TRIDENT_HD double alibi_slope(int h, int H) {
  int p = 1;
  while (2 * p <= H) p *= 2;
  const double exponent = h < p ? 8.0 * (h + 1) / p : (8.0 * (h - p) + 4.0) / p;
  return std::exp2(-exponent);
}

// TNL's per-layer slope factor for layer l of L: 1 - l/(L-1) + 1e-5, so the first layer decays fastest and the
// last hardly at all. A single layer (L = 1) is a first layer.
TRIDENT_HD double tnl_layer_factor(int layer, int n_layers) {
  const double depth = n_layers > 1 ? double(layer) / (n_layers - 1) : 0.0;
  return 1.0 - depth + 1e-5;
}

// The slopes s_h (fp32, as the kernels take them) of H heads.
inline std::vector<float> linear_attention_slopes(int H) {
  std::vector<float> s(H);
  for (int h = 0; h < H; ++h) s[h] = static_cast<float>(alibi_slope(h, H));
  return s;
}

// The slopes of H heads in layer `layer` of `n_layers`, with the TNL layer factor (a model option).
inline std::vector<float> linear_attention_slopes(int H, int layer, int n_layers) {
  std::vector<float> s(H);
  for (int h = 0; h < H; ++h) s[h] = static_cast<float>(alibi_slope(h, H) * tnl_layer_factor(layer, n_layers));
  return s;
}

}  // namespace trident
