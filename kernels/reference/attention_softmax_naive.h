#pragma once
// Naive causal softmax attention over a packed batch of variable-length sequences, templated on the scalar type:
// the tests run it in double, and `trident bench kernels` instantiates it in float as the "naive" side of
// naive-vs-fused. Single-threaded textbook formulas that materialise the full T x T probabilities of each
// (sequence, head), so memory is O(T^2) per call.
//
// Same layouts as kernels/cpu/attention_softmax.h, with N = cu_seqlens.back() and n_seq = cu_seqlens.size() - 1:
//   qkv  (N, 3C)  [q | k | v], head h at columns h*D..h*D+D-1 of each part, C = H*D
//   out  (N, C)
//   lse  (H, N)   log-sum-exp over keys of the scaled scores of each query (scale = 1/sqrt(D))
// Unlike the CPU kernel, backward returns a fresh dqkv (no accumulation), like the other references.
#include <cassert>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace trident::reference {

template <class T>
struct AttentionSoftmaxResult {
  std::vector<T> out;  // (N, C)
  std::vector<T> lse;  // (H, N)
};

namespace detail {

// Causal probabilities of head h over the sequence of tokens [t0, t0 + len): P (len, len) row-major, zero above the
// diagonal, and each row's log-sum-exp of the scaled scores.
template <class T>
void attention_softmax_probs(std::vector<T>& P, std::vector<T>& row_lse, const T* qkv, int64_t t0, int len, int H,
                             int D, int h) {
  const int64_t C = int64_t(H) * D;
  const T scale = T(1) / std::sqrt(T(D));
  P.assign(std::size_t(len) * len, T(0));
  row_lse.assign(len, T(0));
  for (int i = 0; i < len; ++i) {
    const T* q = qkv + (t0 + i) * 3 * C + h * D;
    T* p = P.data() + std::size_t(i) * len;
    T m = -std::numeric_limits<T>::infinity();
    for (int j = 0; j <= i; ++j) {
      const T* k = qkv + (t0 + j) * 3 * C + C + h * D;
      T s = 0;
      for (int d = 0; d < D; ++d) s += q[d] * k[d];
      p[j] = s * scale;
      if (p[j] > m) m = p[j];
    }
    T sum = 0;
    for (int j = 0; j <= i; ++j) sum += std::exp(p[j] - m);
    for (int j = 0; j <= i; ++j) p[j] = std::exp(p[j] - m) / sum;
    row_lse[i] = m + std::log(sum);
  }
}

}  // namespace detail

template <class T>
AttentionSoftmaxResult<T> attention_softmax_forward(const std::vector<T>& qkv, const std::vector<int32_t>& cu_seqlens,
                                                    int H, int D) {
  const int64_t N = cu_seqlens.back(), C = int64_t(H) * D;
  assert(int64_t(qkv.size()) == N * 3 * C);
  AttentionSoftmaxResult<T> r{std::vector<T>(N * C, T(0)), std::vector<T>(H * N, T(0))};
  std::vector<T> P, row_lse;
  for (std::size_t s = 0; s + 1 < cu_seqlens.size(); ++s) {
    const int64_t t0 = cu_seqlens[s];
    const int len = cu_seqlens[s + 1] - cu_seqlens[s];
    for (int h = 0; h < H; ++h) {
      detail::attention_softmax_probs(P, row_lse, qkv.data(), t0, len, H, D, h);
      for (int i = 0; i < len; ++i) {
        T* o = r.out.data() + (t0 + i) * C + h * D;
        for (int j = 0; j <= i; ++j) {
          const T* v = qkv.data() + (t0 + j) * 3 * C + 2 * C + h * D;
          for (int d = 0; d < D; ++d) o[d] += P[std::size_t(i) * len + j] * v[d];
        }
        r.lse[h * N + t0 + i] = row_lse[i];
      }
    }
  }
  return r;
}

// dqkv (N, 3C) of the loss sum(dout * out), recomputing P. With S the scaled scores and P = softmax(S) per row:
//   dV = P^T dO,  dP = dO V^T,  dS = P * (dP - rowsum(dP * P)),  dQ = scale dS K,  dK = scale dS^T Q
template <class T>
std::vector<T> attention_softmax_backward(const std::vector<T>& dout, const std::vector<T>& qkv,
                                          const std::vector<int32_t>& cu_seqlens, int H, int D) {
  const int64_t C = int64_t(H) * D;
  assert(int64_t(qkv.size()) == cu_seqlens.back() * 3 * C && int64_t(dout.size()) == cu_seqlens.back() * C);
  const T scale = T(1) / std::sqrt(T(D));
  std::vector<T> dqkv(qkv.size(), T(0));
  std::vector<T> P, row_lse, dp;
  for (std::size_t s = 0; s + 1 < cu_seqlens.size(); ++s) {
    const int64_t t0 = cu_seqlens[s];
    const int len = cu_seqlens[s + 1] - cu_seqlens[s];
    for (int h = 0; h < H; ++h) {
      detail::attention_softmax_probs(P, row_lse, qkv.data(), t0, len, H, D, h);
      auto q = [&](int i) { return qkv.data() + (t0 + i) * 3 * C + h * D; };
      auto k = [&](int j) { return qkv.data() + (t0 + j) * 3 * C + C + h * D; };
      auto v = [&](int j) { return qkv.data() + (t0 + j) * 3 * C + 2 * C + h * D; };
      auto dq = [&](int i) { return dqkv.data() + (t0 + i) * 3 * C + h * D; };
      auto dk = [&](int j) { return dqkv.data() + (t0 + j) * 3 * C + C + h * D; };
      auto dv = [&](int j) { return dqkv.data() + (t0 + j) * 3 * C + 2 * C + h * D; };
      for (int i = 0; i < len; ++i) {
        const T* dO = dout.data() + (t0 + i) * C + h * D;
        const T* p = P.data() + std::size_t(i) * len;
        dp.assign(i + 1, T(0));  // row i of dP
        T p_dot_dp = 0;  // rowsum(dP * P)
        for (int j = 0; j <= i; ++j) {
          for (int d = 0; d < D; ++d) {
            dv(j)[d] += p[j] * dO[d];
            dp[j] += dO[d] * v(j)[d];
          }
          p_dot_dp += dp[j] * p[j];
        }
        for (int j = 0; j <= i; ++j) {
          const T ds = p[j] * (dp[j] - p_dot_dp);
          for (int d = 0; d < D; ++d) {
            dq(i)[d] += scale * ds * k(j)[d];
            dk(j)[d] += scale * ds * q(i)[d];
          }
        }
      }
    }
  }
  return dqkv;
}

}  // namespace trident::reference
