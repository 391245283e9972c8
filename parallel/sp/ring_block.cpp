#include "parallel/sp/ring_block.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/gemm.h"
#include "kernels/shared/exp.h"
#include "kernels/shared/online_softmax.h"

namespace trident {

namespace {

// Query and key tile sizes, as in kernels/cpu/attention_softmax.cpp: a 64 x 64 score tile stays in L2.
constexpr int64_t kBr = 64;
constexpr int64_t kBc = 64;

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
bool tile_masked(const QueryRows& rows, int64_t r0, int64_t br, int64_t k0, int64_t bc) {
  return k0 > rows.pos0 + r0 + br - 1 || k0 + bc <= rows.doc_begin[r0];
}

}  // namespace

void OnlineSoftmaxRows::reset(int64_t n, int H, int D) {
  m.assign(H * n, -INFINITY);
  l.assign(H * n, 0.0f);
  acc.assign(n * H * D, 0.0f);
}

// Work items are (query tile, head); each owns its rows of m, l and acc.
void ring_block_forward(OnlineSoftmaxRows& state, const QueryRows& rows, const KeyBlock& keys, int H, int D) {
  const int64_t C = int64_t(H) * D, n = rows.n, n_tiles = (n + kBr - 1) / kBr;
  const float scale = 1.0f / std::sqrt(float(D));
#pragma omp parallel
  {
    std::vector<float> S(kBr * kBc);
#pragma omp for schedule(dynamic, 1)
    for (int64_t item = 0; item < n_tiles * H; ++item) {
      const int64_t r0 = item / H * kBr, br = std::min(kBr, n - r0);
      const int h = int(item % H);
      const float* Q = rows.q + r0 * rows.ld + h * D;
      float* acc = state.acc.data() + r0 * C + h * D;
      float* m = state.m.data() + h * n + r0;
      float* l = state.l.data() + h * n + r0;
      for (int64_t j0 = 0; j0 < keys.n; j0 += kBc) {
        const int64_t bc = std::min(kBc, keys.n - j0), k0 = keys.pos0 + j0;
        if (tile_masked(rows, r0, br, k0, bc)) continue;
        const float* K = keys.kv + j0 * 2 * C + h * D;
        const float* V = K + C;
        cpu::gemm(Trans::no, Trans::yes, br, bc, D, scale, Q, rows.ld, K, 2 * C, 0.0f, S.data(), kBc);
        for (int64_t r = 0; r < br; ++r) {
          float* s = S.data() + r * kBc;
          const KeyRange k = visible(rows.pos0 + r0 + r, rows.doc_begin[r0 + r], k0, bc);
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

void ring_block_finish(float* out, float* lse, const OnlineSoftmaxRows& state, int64_t n, int H, int D) {
  const int64_t C = int64_t(H) * D;
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i)
    for (int h = 0; h < H; ++h) {
      const float m = state.m[h * n + i], l = state.l[h * n + i];
      const float inv_l = 1.0f / l;
      for (int d = 0; d < D; ++d) out[i * C + h * D + d] = state.acc[i * C + h * D + d] * inv_l;
      lse[h * n + i] = online_softmax_lse(m, l);
    }
}

std::vector<float> softmax_delta(const float* out, const float* dout, int64_t n, int H, int D) {
  const int64_t C = int64_t(H) * D;
  std::vector<float> delta(H * n);
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i)
    for (int h = 0; h < H; ++h) {
      float sum = 0.0f;
      for (int d = 0; d < D; ++d) sum += dout[i * C + h * D + d] * out[i * C + h * D + d];
      delta[h * n + i] = sum;
    }
  return delta;
}

// Work items are heads: an item owns its head's columns of dq and dkv, so the GEMMs accumulate in place with no
// atomics (parallelism is H-wide, enough for a baseline on a few cores).
void ring_block_backward(float* dq, int64_t ld_dq, float* dkv, const QueryRows& rows, const float* dout,
                         const float* lse, const float* delta, const KeyBlock& keys, int H, int D) {
  const int64_t C = int64_t(H) * D, n = rows.n;
  const float scale = 1.0f / std::sqrt(float(D));
#pragma omp parallel
  {
    std::vector<float> P(kBr * kBc), dS(kBr * kBc);
#pragma omp for schedule(dynamic, 1)
    for (int h = 0; h < H; ++h) {
      for (int64_t j0 = 0; j0 < keys.n; j0 += kBc) {
        const int64_t bc = std::min(kBc, keys.n - j0), k0 = keys.pos0 + j0;
        const float* K = keys.kv + j0 * 2 * C + h * D;
        const float* V = K + C;
        float* dK = dkv + j0 * 2 * C + h * D;
        float* dV = dK + C;
        for (int64_t r0 = 0; r0 < n; r0 += kBr) {
          const int64_t br = std::min(kBr, n - r0);
          if (tile_masked(rows, r0, br, k0, bc)) continue;
          const float* Q = rows.q + r0 * rows.ld + h * D;
          const float* dO = dout + r0 * C + h * D;
          float* dQ = dq + r0 * ld_dq + h * D;
          const float* row_lse = lse + h * n + r0;
          const float* row_delta = delta + h * n + r0;

          cpu::gemm(Trans::no, Trans::yes, br, bc, D, scale, Q, rows.ld, K, 2 * C, 0.0f, P.data(), kBc);
          for (int64_t r = 0; r < br; ++r) {
            float* p = P.data() + r * kBc;
            const KeyRange k = visible(rows.pos0 + r0 + r, rows.doc_begin[r0 + r], k0, bc);
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
          cpu::gemm(Trans::yes, Trans::no, bc, D, br, scale, dS.data(), kBc, Q, rows.ld, 1.0f, dK, 2 * C);  // dK
        }
      }
    }
  }
}

}  // namespace trident
