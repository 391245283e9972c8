#pragma once
// Naive causal linear attention with a per-head decay: the token-by-token recurrence of docs/methods.md §1 (Linear
// attention with decay), the oracle of the chunked kernel. Templated on the scalar type: the tests run it in double.
//
// Same arguments and contract as trident::cpu::attention_linear_forward / _backward (kernels/cpu/attention_linear.h)
// minus `chunk`: same layouts, nullptr for a zero state_in / dstate_out or an unwanted state_out / dstate_in, and
// backward accumulates (+=). `trident bench kernels` can therefore time the oracle in the kernel's own precision by
// passing the kernel's float buffers to reference::attention_linear_forward<float> / _backward<float>. Memory is
// one D x D state; time is O(N H D^2).
//
// Per sequence and head, S holds the state weighted to the *current* token i (S = S_in at i = 0):
//   S += k_i^T v_i;   o_i = q_i S;   S *= lambda          (lambda = exp(-s_h))
// which gives o_i = q_i (lambda^i S_in + sum_{j<=i} lambda^(i-j) k_j^T v_j) and, after the last token,
// S_out = lambda^n S_in + sum_j lambda^(n-j) k_j^T v_j.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace trident::reference {

template <class T>
void attention_linear_forward(T* out, T* state_out, const T* qkv, const T* slopes, const T* state_in,
                              const int32_t* cu_seqlens, int n_seq, int64_t N, int H, int D) {
  const int64_t C = int64_t(H) * D, DD = int64_t(D) * D;
  std::vector<T> S(DD);
  for (int seq = 0; seq < n_seq; ++seq) {
    for (int h = 0; h < H; ++h) {
      const T lambda = std::exp(-slopes[h]);
      const int64_t slot = (int64_t(seq) * H + h) * DD;
      for (int64_t e = 0; e < DD; ++e) S[e] = state_in ? state_in[slot + e] : T(0);
      for (int64_t t = cu_seqlens[seq]; t < cu_seqlens[seq + 1]; ++t) {
        const T* q = qkv + t * 3 * C + h * D;
        const T* k = q + C;
        const T* v = q + 2 * C;
        for (int a = 0; a < D; ++a)
          for (int b = 0; b < D; ++b) S[a * D + b] += k[a] * v[b];
        for (int b = 0; b < D; ++b) {
          T o = 0;
          for (int a = 0; a < D; ++a) o += q[a] * S[a * D + b];
          out[t * C + h * D + b] = o;
        }
        for (auto& x : S) x *= lambda;
      }
      if (state_out) std::copy(S.begin(), S.end(), state_out + slot);
    }
  }
}

// Per sequence and head, with P_i = S_i + k_i^T v_i the state q_i reads and S_{i+1} = lambda P_i:
//   dq_i = do_i P_i^T                                  (forward sweep over the states)
//   dP_i = lambda dS_{i+1} + q_i^T do_i,  dS_n = dS_out  (reverse sweep over the state gradients)
//   dk_i = dP_i v_i^T,  dv_i = k_i dP_i,  dS_i = dP_i,  dS_in = dS_0
template <class T>
void attention_linear_backward(T* dqkv, T* dstate_in, const T* dout, const T* dstate_out, const T* qkv,
                               const T* slopes, const T* state_in, const int32_t* cu_seqlens, int n_seq, int64_t N,
                               int H, int D) {
  const int64_t C = int64_t(H) * D, DD = int64_t(D) * D;
  std::vector<T> S(DD), dS(DD);
  for (int seq = 0; seq < n_seq; ++seq) {
    for (int h = 0; h < H; ++h) {
      const T lambda = std::exp(-slopes[h]);
      const int64_t slot = (int64_t(seq) * H + h) * DD;
      for (int64_t e = 0; e < DD; ++e) S[e] = state_in ? state_in[slot + e] : T(0);
      for (int64_t t = cu_seqlens[seq]; t < cu_seqlens[seq + 1]; ++t) {
        const T* k = qkv + t * 3 * C + C + h * D;
        const T* v = k + C;
        const T* dout_t = dout + t * C + h * D;
        T* dq = dqkv + t * 3 * C + h * D;
        for (int a = 0; a < D; ++a)
          for (int b = 0; b < D; ++b) S[a * D + b] += k[a] * v[b];
        for (int a = 0; a < D; ++a)
          for (int b = 0; b < D; ++b) dq[a] += dout_t[b] * S[a * D + b];
        for (auto& x : S) x *= lambda;
      }
      for (int64_t e = 0; e < DD; ++e) dS[e] = dstate_out ? dstate_out[slot + e] : T(0);
      for (int64_t t = cu_seqlens[seq + 1] - 1; t >= cu_seqlens[seq]; --t) {
        const T* q = qkv + t * 3 * C + h * D;
        const T* k = q + C;
        const T* v = q + 2 * C;
        const T* dout_t = dout + t * C + h * D;
        T* dk = dqkv + t * 3 * C + C + h * D;
        T* dv = dk + C;
        for (auto& x : dS) x *= lambda;
        for (int a = 0; a < D; ++a)
          for (int b = 0; b < D; ++b) dS[a * D + b] += q[a] * dout_t[b];
        for (int a = 0; a < D; ++a)
          for (int b = 0; b < D; ++b) {
            dk[a] += dS[a * D + b] * v[b];
            dv[b] += k[a] * dS[a * D + b];
          }
      }
      if (dstate_in)
        for (int64_t e = 0; e < DD; ++e) dstate_in[slot + e] += dS[e];
    }
  }
}

}  // namespace trident::reference
