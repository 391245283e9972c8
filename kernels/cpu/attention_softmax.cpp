#include "kernels/cpu/attention_softmax.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "kernels/cpu/attention_tiles.h"
#include "kernels/cpu/gemm.h"
#include "kernels/shared/exp.h"
#include "kernels/shared/online_softmax.h"

namespace trident::cpu {

namespace {

// How many of the keys k0 .. k0+bc-1 query q may attend to (causal: keys j <= q); positions local to the sequence.
int causal_keys(int q, int k0, int bc) { return std::clamp(q - k0 + 1, 0, bc); }

struct QueryTile {
  int seq, q0;  // sequence, first query row local to it
};

}  // namespace

// Work items are (query tile, head): each owns its rows of out and lse, and its scratch is one score tile and one
// output accumulator tile. Key tiles are read straight from qkv (row stride 3C), which the GEMMs accept as is.
void attention_softmax_forward(float* out, float* lse, const float* qkv, const int32_t* cu_seqlens, int n_seq,
                               int64_t N, int H, int D) {
  const int64_t C = int64_t(H) * D, ld = 3 * C;
  const float scale = 1.0f / std::sqrt(float(D));

  // A tile at offset q0 visits q0/kBc + 1 key tiles. Handing out the most expensive tiles first lets dynamic
  // scheduling balance sequences of very different lengths (longest-processing-time-first).
  std::vector<QueryTile> tiles;
  for (int s = 0; s < n_seq; ++s)
    for (int q0 = 0; q0 < cu_seqlens[s + 1] - cu_seqlens[s]; q0 += kBr) tiles.push_back({s, q0});
  std::stable_sort(tiles.begin(), tiles.end(), [](QueryTile a, QueryTile b) { return a.q0 > b.q0; });
  const int64_t n_items = int64_t(tiles.size()) * H;

#pragma omp parallel
  {
    std::vector<float> S(kBr * kBc), acc(kBr * D), m(kBr), l(kBr);
#pragma omp for schedule(dynamic, 1)
    for (int64_t item = 0; item < n_items; ++item) {
      const QueryTile tile = tiles[item / H];
      const int h = int(item % H);
      const int64_t t0 = cu_seqlens[tile.seq];
      const int q0 = tile.q0, br = std::min(kBr, cu_seqlens[tile.seq + 1] - cu_seqlens[tile.seq] - q0);
      const float* Q = qkv + (t0 + q0) * ld + h * D;
      std::fill(acc.begin(), acc.end(), 0.0f);
      std::fill(m.begin(), m.end(), -INFINITY);
      std::fill(l.begin(), l.end(), 0.0f);

      // Causal: only key tiles that start at or before the last query row, each cut at that row. Every row sees
      // key 0 in the first tile, so its running max is finite from then on.
      for (int k0 = 0; k0 < q0 + br; k0 += kBc) {
        const int bc = std::min(kBc, q0 + br - k0);
        const float* K = qkv + (t0 + k0) * ld + C + h * D;
        const float* V = K + C;
        gemm(Trans::no, Trans::yes, br, bc, D, scale, Q, ld, K, ld, 0.0f, S.data(), kBc);  // S = scale Q K^T
        for (int r = 0; r < br; ++r) {
          float* s = S.data() + r * kBc;
          const int n = causal_keys(q0 + r, k0, bc);
          float tile_max = -INFINITY;
          TRIDENT_SIMD_REDUCTION(max, tile_max)
          for (int j = 0; j < n; ++j) tile_max = std::max(tile_max, s[j]);
          const float alpha = online_softmax_advance(m[r], l[r], tile_max);
          float sum = 0.0f;
          TRIDENT_SIMD_REDUCTION(+, sum)
          for (int j = 0; j < n; ++j) {
            s[j] = kernel_exp(s[j] - m[r]);
            sum += s[j];
          }
          std::fill(s + n, s + bc, 0.0f);  // masked keys get probability 0 in the P V product
          l[r] += sum;
          for (int d = 0; d < D; ++d) acc[r * D + d] *= alpha;
        }
        gemm(Trans::no, Trans::no, br, D, bc, 1.0f, S.data(), kBc, V, ld, 1.0f, acc.data(), D);  // acc += P V
      }

      for (int r = 0; r < br; ++r) {
        float* o = out + (t0 + q0 + r) * C + h * D;
        const float inv_l = 1.0f / l[r];
        for (int d = 0; d < D; ++d) o[d] = acc[r * D + d] * inv_l;
        lse[h * N + t0 + q0 + r] = online_softmax_lse(m[r], l[r]);
      }
    }
  }
}

// Work items are whole (sequence, head) pairs: each loops over key tiles and, inside, over the query tiles on and
// below the diagonal, recomputing P = exp(S - lse) tile by tile. An item then owns every dQ, dK and dV row it
// touches, so the GEMMs accumulate straight into dqkv (beta = 1) with no atomics, no per-thread dQ copies to reduce
// and no second pass that recomputes P for dQ (FA2 on GPUs parallelises over key tiles and adds dQ atomically);
// the result is also independent of the thread count. The price is n_seq * H items instead of one per key tile:
// ample for training batches (sequences x heads >= cores), but a single long sequence with fewer heads than cores
// leaves cores idle.
void attention_softmax_backward(float* dqkv, const float* dout, const float* qkv, const float* out, const float* lse,
                                const int32_t* cu_seqlens, int n_seq, int64_t N, int H, int D) {
  const int64_t C = int64_t(H) * D, ld = 3 * C;
  const float scale = 1.0f / std::sqrt(float(D));

  // An item costs ~len^2: longest sequences first, so dynamic scheduling balances lengths that vary widely.
  std::vector<int> order(n_seq);
  std::iota(order.begin(), order.end(), 0);
  auto len_of = [&](int s) { return cu_seqlens[s + 1] - cu_seqlens[s]; };
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return len_of(a) > len_of(b); });
  const int64_t n_items = int64_t(n_seq) * H;

#pragma omp parallel
  {
    std::vector<float> P(kBr * kBc), dS(kBr * kBc), delta;
#pragma omp for schedule(dynamic, 1)
    for (int64_t item = 0; item < n_items; ++item) {
      const int seq = order[item / H], h = int(item % H);
      const int64_t t0 = cu_seqlens[seq];
      const int len = len_of(seq);

      // delta_i = rowsum(dO_i * O_i), which equals rowsum(dP_i * P_i), the softmax Jacobian's correction term,
      // at O(D) per row instead of O(len).
      delta.resize(len);
      for (int i = 0; i < len; ++i) {
        const float* o = out + (t0 + i) * C + h * D;
        const float* dout_i = dout + (t0 + i) * C + h * D;
        float sum = 0.0f;
        for (int d = 0; d < D; ++d) sum += dout_i[d] * o[d];
        delta[i] = sum;
      }

      for (int k0 = 0; k0 < len; k0 += kBc) {
        const int bc = std::min(kBc, len - k0);
        const float* K = qkv + (t0 + k0) * ld + C + h * D;
        const float* V = K + C;
        float* dK = dqkv + (t0 + k0) * ld + C + h * D;
        float* dV = dK + C;
        for (int q0 = k0 / kBr * kBr; q0 < len; q0 += kBr) {  // causal: the query tile holding row k0, and below
          const int br = std::min(kBr, len - q0);
          const float* Q = qkv + (t0 + q0) * ld + h * D;
          const float* dO = dout + (t0 + q0) * C + h * D;
          float* dQ = dqkv + (t0 + q0) * ld + h * D;
          const float* row_lse = lse + h * N + t0 + q0;

          gemm(Trans::no, Trans::yes, br, bc, D, scale, Q, ld, K, ld, 0.0f, P.data(), kBc);  // S = scale Q K^T
          for (int r = 0; r < br; ++r) {
            float* p = P.data() + r * kBc;
            const int n = causal_keys(q0 + r, k0, bc);
            for (int j = 0; j < n; ++j) p[j] = kernel_exp(p[j] - row_lse[r]);
            std::fill(p + n, p + bc, 0.0f);
          }
          gemm(Trans::yes, Trans::no, bc, D, br, 1.0f, P.data(), kBc, dO, C, 1.0f, dV, ld);    // dV += P^T dO
          gemm(Trans::no, Trans::yes, br, bc, D, 1.0f, dO, C, V, ld, 0.0f, dS.data(), kBc);   // dP = dO V^T
          for (int r = 0; r < br; ++r) {
            const float* p = P.data() + r * kBc;
            float* ds = dS.data() + r * kBc;
            for (int j = 0; j < bc; ++j) ds[j] = p[j] * (ds[j] - delta[q0 + r]);  // dS = P (dP - delta)
          }
          gemm(Trans::no, Trans::no, br, D, bc, scale, dS.data(), kBc, K, ld, 1.0f, dQ, ld);   // dQ += scale dS K
          gemm(Trans::yes, Trans::no, bc, D, br, scale, dS.data(), kBc, Q, ld, 1.0f, dK, ld);  // dK += scale dS^T Q
        }
      }
    }
  }
}

}  // namespace trident::cpu
