#pragma once
// Online softmax (Milakov & Gimelshein 2018; FlashAttention): a row's softmax over keys is built one key tile at a
// time from a running max m and a running sum l = sum_j exp(s_j - m). When a tile raises the max from m to m', all
// that was accumulated against the old max (l and the row's output accumulator) is rescaled by exp(m - m').
//
// Per row:  m = -inf, l = 0, acc = 0
//           for each tile:  alpha = online_softmax_advance(m, l, max_j s_j);  acc *= alpha
//                           p_j = exp(s_j - m);  l += sum_j p_j;  acc += sum_j p_j v_j
//           out = acc / l,  lse = online_softmax_lse(m, l)
#include <cmath>

#include "kernels/shared/hd.h"

namespace trident {

// exp(m_old - m_new) with m_new >= m_old. Equal maxima give exactly 1, which also covers a row that has seen only
// masked keys so far (-inf, -inf), where the plain formula would be NaN.
TRIDENT_HD float online_softmax_rescale(float m_old, float m_new) {
  return m_old == m_new ? 1.0f : std::exp(m_old - m_new);
}

// Moves the running max m to include a tile whose largest score is tile_max and rescales l to the new max.
// Returns the factor the caller applies to its output accumulator; the caller then adds the tile's exp(s_j - m).
TRIDENT_HD float online_softmax_advance(float& m, float& l, float tile_max) {
  float m_new = tile_max > m ? tile_max : m;
  float alpha = online_softmax_rescale(m, m_new);
  m = m_new;
  l *= alpha;
  return alpha;
}

// log sum_j exp(s_j) of the finished row: what backward needs to recompute p_j = exp(s_j - lse).
TRIDENT_HD float online_softmax_lse(float m, float l) { return m + std::log(l); }

}  // namespace trident
