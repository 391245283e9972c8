#include "kernels/cpu/attention_block.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/attention_tiles.h"
#include "kernels/cpu/gemm.h"
#include "kernels/shared/exp.h"
#include "kernels/shared/online_softmax.h"

namespace trident::cpu {

namespace {

// Visible keys [lo, hi) of the query at global position p within the key tile at positions [k0, k0 + bc), local
// to the tile; lo >= hi when the tile holds none of them.
struct KeyRange {
  int64_t lo, hi;
};
KeyRange visible(int64_t p, int64_t doc_begin, int64_t k0, int64_t bc) {
  return {std::max(doc_begin, k0) - k0, std::min(p + 1, k0 + bc) - k0};
}

// Whether a query tile (rows r0 .. r0+br-1) sees nothing of a key tile: all keys come after the last query, or
// before the document of the first query (doc_begin does not decrease along the rows).
bool tile_masked(int64_t q_pos0, const int64_t* doc_begin, int64_t r0, int64_t br, int64_t k0, int64_t bc) {
  return k0 > q_pos0 + r0 + br - 1 || k0 + bc <= doc_begin[r0];
}

}  // namespace

// Work items are (query tile, head); each owns its rows of m, l and acc.
void attention_block_forward(float* m_all, float* l_all, float* acc_all, const float* q, int64_t ld_q, int64_t n,
                             int64_t q_pos0, const int64_t* doc_begin, const float* kv, int64_t n_k, int64_t k_pos0,
                             int H, int D) {
  const int64_t C = int64_t(H) * D, n_tiles = (n + kBr - 1) / kBr;
  const float scale = 1.0f / std::sqrt(float(D));
#pragma omp parallel
  {
    std::vector<float> S(kBr * kBc);
#pragma omp for schedule(dynamic, 1)
    for (int64_t item = 0; item < n_tiles * H; ++item) {
      const int64_t r0 = item / H * kBr, br = std::min<int64_t>(kBr, n - r0);
      const int h = int(item % H);
      const float* Q = q + r0 * ld_q + h * D;
      float* acc = acc_all + r0 * C + h * D;
      float* m = m_all + h * n + r0;
      float* l = l_all + h * n + r0;
      for (int64_t j0 = 0; j0 < n_k; j0 += kBc) {
        const int64_t bc = std::min<int64_t>(kBc, n_k - j0), k0 = k_pos0 + j0;
        if (tile_masked(q_pos0, doc_begin, r0, br, k0, bc)) continue;
        const float* K = kv + j0 * 2 * C + h * D;
        const float* V = K + C;
        cpu::gemm(Trans::no, Trans::yes, br, bc, D, scale, Q, ld_q, K, 2 * C, 0.0f, S.data(), kBc);
        for (int64_t r = 0; r < br; ++r) {
          float* s = S.data() + r * kBc;
          const KeyRange k = visible(q_pos0 + r0 + r, doc_begin[r0 + r], k0, bc);
          if (k.lo >= k.hi) {  // nothing visible in this tile: the row's state stays as it is
            std::fill(s, s + bc, 0.0f);
            continue;
          }
          float tile_max = -INFINITY;
          for (int64_t j = k.lo; j < k.hi; ++j) tile_max = std::max(tile_max, s[j]);
          const float alpha = online_softmax_advance(m[r], l[r], tile_max);
          float sum = 0.0f;
          for (int64_t j = k.lo; j < k.hi; ++j) {
            s[j] = kernel_exp(s[j] - m[r]);
            sum += s[j];
          }
          std::fill(s, s + k.lo, 0.0f);  // masked keys get probability 0 in the P V product
          std::fill(s + k.hi, s + bc, 0.0f);
          l[r] += sum;
          for (int d = 0; d < D; ++d) acc[r * C + d] *= alpha;
        }
        cpu::gemm(Trans::no, Trans::no, br, D, bc, 1.0f, S.data(), kBc, V, 2 * C, 1.0f, acc, C);  // acc += P V
      }
    }
  }
}

void attention_block_finish(float* out, float* lse, const float* m_all, const float* l_all, const float* acc,
                            int64_t n, int H, int D) {
  const int64_t C = int64_t(H) * D;
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i)
    for (int h = 0; h < H; ++h) {
      const float m = m_all[h * n + i], l = l_all[h * n + i];
      const float inv_l = 1.0f / l;
      for (int d = 0; d < D; ++d) out[i * C + h * D + d] = acc[i * C + h * D + d] * inv_l;
      lse[h * n + i] = online_softmax_lse(m, l);
    }
}

void attention_block_delta(float* delta, const float* out, const float* dout, int64_t n, int H, int D) {
  const int64_t C = int64_t(H) * D;
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i)
    for (int h = 0; h < H; ++h) {
      float sum = 0.0f;
      for (int d = 0; d < D; ++d) sum += dout[i * C + h * D + d] * out[i * C + h * D + d];
      delta[h * n + i] = sum;
    }
}

// Work items are heads: an item owns its head's columns of dq and dkv, so the GEMMs accumulate in place with no
// atomics (parallelism is H-wide, enough for a baseline on a few cores).
void attention_block_backward(float* dq, int64_t ld_dq, float* dkv, const float* q, int64_t ld_q, int64_t n,
                              int64_t q_pos0, const int64_t* doc_begin, const float* dout, const float* lse,
                              const float* delta, const float* kv, int64_t n_k, int64_t k_pos0, int H, int D) {
  const int64_t C = int64_t(H) * D;
  const float scale = 1.0f / std::sqrt(float(D));
#pragma omp parallel
  {
    std::vector<float> P(kBr * kBc), dS(kBr * kBc);
#pragma omp for schedule(dynamic, 1)
    for (int h = 0; h < H; ++h) {
      for (int64_t j0 = 0; j0 < n_k; j0 += kBc) {
        const int64_t bc = std::min<int64_t>(kBc, n_k - j0), k0 = k_pos0 + j0;
        const float* K = kv + j0 * 2 * C + h * D;
        const float* V = K + C;
        float* dK = dkv + j0 * 2 * C + h * D;
        float* dV = dK + C;
        for (int64_t r0 = 0; r0 < n; r0 += kBr) {
          const int64_t br = std::min<int64_t>(kBr, n - r0);
          if (tile_masked(q_pos0, doc_begin, r0, br, k0, bc)) continue;
          const float* Q = q + r0 * ld_q + h * D;
          const float* dO = dout + r0 * C + h * D;
          float* dQ = dq + r0 * ld_dq + h * D;
          const float* row_lse = lse + h * n + r0;
          const float* row_delta = delta + h * n + r0;

          cpu::gemm(Trans::no, Trans::yes, br, bc, D, scale, Q, ld_q, K, 2 * C, 0.0f, P.data(), kBc);
          for (int64_t r = 0; r < br; ++r) {
            float* p = P.data() + r * kBc;
            const KeyRange k = visible(q_pos0 + r0 + r, doc_begin[r0 + r], k0, bc);
            for (int64_t j = 0; j < bc; ++j) p[j] = j >= k.lo && j < k.hi ? kernel_exp(p[j] - row_lse[r]) : 0.0f;
          }
          cpu::gemm(Trans::yes, Trans::no, bc, D, br, 1.0f, P.data(), kBc, dO, C, 1.0f, dV, 2 * C);  // dV += P^T dO
          cpu::gemm(Trans::no, Trans::yes, br, bc, D, 1.0f, dO, C, V, 2 * C, 0.0f, dS.data(), kBc);  // dP = dO V^T
          for (int64_t r = 0; r < br; ++r)
            for (int64_t j = 0; j < bc; ++j) {
              float* ds = dS.data() + r * kBc + j;
              *ds = P[r * kBc + j] * (*ds - row_delta[r]);  // dS = P (dP - delta)
            }
          cpu::gemm(Trans::no, Trans::no, br, D, bc, scale, dS.data(), kBc, K, 2 * C, 1.0f, dQ, ld_dq);  // dQ
          cpu::gemm(Trans::yes, Trans::no, bc, D, br, scale, dS.data(), kBc, Q, ld_q, 1.0f, dK, 2 * C);  // dK
        }
      }
    }
  }
}

}  // namespace trident::cpu
