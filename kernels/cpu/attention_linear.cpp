#include "kernels/cpu/attention_linear.h"

#include <algorithm>
#include <vector>

#include "kernels/common/error.h"
#include "kernels/cpu/gemm.h"
#include "kernels/shared/decay.h"

// One task per (sequence, head), OpenMP-parallel with a dynamic schedule (sequences of a packed batch differ in
// length). Inside a task the chunk products are single-threaded cblas_sgemm calls (OpenBLAS on OpenMP runs a GEMM on
// its calling thread inside a parallel region). Q, K, V, dO and the outputs are passed to the GEMMs as strided views
// of the packed (N, 3C) / (N, C) buffers: BLAS packs its operands into contiguous panels itself, so copying the head
// slices first would only add a pass. Only the decay-scaled operands (Q⊙q_decay, K⊙k_decay, ...) are materialised,
// in a per-thread (chunk, D) buffer. Within a task a chunk's rows are [i0, i0 + c) of the sequence, c <= cmax.

namespace trident::cpu {

namespace {

// The decay factors of docs/methods.md §1 (chunked form) of one head for chunks of up to cmax tokens. q and diag do
// not depend on the chunk's length; k and block do, and are recomputed only when it changes (for the last, shorter
// chunk).
class ChunkDecay {
 public:
  ChunkDecay(float s, int cmax) : s_(s), cmax_(cmax), q_(cmax), diag_(std::size_t(cmax) * cmax), k_(cmax) {
    for (int i = 0; i < cmax; ++i) {
      q_[i] = q_decay(s, i);
      for (int j = 0; j < cmax; ++j) diag_[std::size_t(i) * cmax + j] = diag_decay(s, i, j);
    }
  }

  void set_length(int c) {
    if (c == c_) return;
    c_ = c;
    for (int j = 0; j < c; ++j) k_[j] = k_decay(s_, j, c);
    block_ = block_decay(s_, c);
  }

  const float* q() const { return q_.data(); }
  const float* k() const { return k_.data(); }
  float block() const { return block_; }
  // Row i of diag_decay (cmax entries, zero for keys after i).
  const float* diag_row(int i) const { return diag_.data() + std::size_t(i) * cmax_; }

 private:
  float s_;
  int cmax_;
  std::vector<float> q_, diag_, k_;
  int c_ = 0;
  float block_ = 0.0f;
};

// dst (c, D) = diag(scale) * src, src rows ld apart.
void scale_rows(float* dst, const float* src, int64_t ld, const float* scale, int c, int D) {
  for (int i = 0; i < c; ++i)
    for (int d = 0; d < D; ++d) dst[i * D + d] = scale[i] * src[i * ld + d];
}

// A (c, c; row stride cmax) = (X Y^T) ⊙ diag_decay: the masked, decayed score tile of the intra-chunk products.
void masked_scores(float* A, const float* X, int64_t ldx, const float* Y, int64_t ldy, const ChunkDecay& dec, int c,
                   int cmax, int D) {
  gemm(Trans::no, Trans::yes, c, c, D, 1.0f, X, ldx, Y, ldy, 0.0f, A, cmax);
  for (int i = 0; i < c; ++i) {
    const float* m = dec.diag_row(i);
    for (int j = 0; j < c; ++j) A[i * cmax + j] *= m[j];
  }
}

// S_t = block_decay S_{t-1} + (K ⊙ k_decay)^T V, in place on S (D, D); scratch holds (c, D).
void advance_state(float* S, const float* k, const float* v, int64_t ld, const ChunkDecay& dec, int c, int D,
                   float* scratch) {
  scale_rows(scratch, k, ld, dec.k(), c, D);
  gemm(Trans::yes, Trans::no, D, D, c, 1.0f, scratch, D, v, ld, dec.block(), S, D);
}

void check_args(int n_seq, int H, int D, int chunk) {
  TRIDENT_CHECK(n_seq >= 0 && H >= 1 && D >= 1 && chunk >= 1, "n_seq={} H={} D={} chunk={}", n_seq, H, D, chunk);
}

}  // namespace

void attention_linear_forward(float* out, float* state_out, const float* qkv, const float* slopes,
                              const float* state_in, const int32_t* cu_seqlens, int n_seq, int64_t N, int H, int D,
                              int chunk) {
  check_args(n_seq, H, D, chunk);
  const int64_t C = int64_t(H) * D, ld = 3 * C, DD = int64_t(D) * D;
#pragma omp parallel
  {
    std::vector<float> scores, scaled, S(DD);
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < int64_t(n_seq) * H; ++task) {
      const int seq = int(task / H), h = int(task % H);
      const int64_t t0 = cu_seqlens[seq], n = cu_seqlens[seq + 1] - t0, slot = task * DD;
      const int cmax = int(std::min<int64_t>(chunk, n));
      ChunkDecay dec(slopes[h], cmax);
      scores.resize(std::size_t(cmax) * cmax);
      scaled.resize(std::size_t(cmax) * D);
      if (state_in)
        std::copy(state_in + slot, state_in + slot + DD, S.begin());
      else
        std::fill(S.begin(), S.end(), 0.0f);

      for (int64_t i0 = 0; i0 < n; i0 += cmax) {
        const int c = int(std::min<int64_t>(cmax, n - i0));
        dec.set_length(c);
        const float* q = qkv + (t0 + i0) * ld + h * D;
        const float* k = q + C;
        const float* v = q + 2 * C;
        float* o = out + (t0 + i0) * C + h * D;
        // O = [(Q K^T) ⊙ diag_decay] V + (Q ⊙ q_decay) S_{t-1}
        masked_scores(scores.data(), q, ld, k, ld, dec, c, cmax, D);
        gemm(Trans::no, Trans::no, c, D, c, 1.0f, scores.data(), cmax, v, ld, 0.0f, o, C);
        scale_rows(scaled.data(), q, ld, dec.q(), c, D);
        gemm(Trans::no, Trans::no, c, D, D, 1.0f, scaled.data(), D, S.data(), D, 1.0f, o, C);
        advance_state(S.data(), k, v, ld, dec, c, D, scaled.data());
      }
      if (state_out) std::copy(S.begin(), S.end(), state_out + slot);
    }
  }
}

// Forward sweep: recompute and keep each chunk's incoming state S_{t-1} (n_chunks x D x D fp32 per task, the
// LASP "KV cache" at chunk granularity). Reverse sweep: carry dS_t from dstate_out down to dS_in, applying the
// docs/methods.md §1 backward equations per chunk. dq, dk, dv accumulate through beta = 1 GEMMs straight into dqkv.
void attention_linear_backward(float* dqkv, float* dstate_in, const float* dout, const float* dstate_out,
                               const float* qkv, const float* slopes, const float* state_in,
                               const int32_t* cu_seqlens, int n_seq, int64_t N, int H, int D, int chunk) {
  check_args(n_seq, H, D, chunk);
  const int64_t C = int64_t(H) * D, ld = 3 * C, DD = int64_t(D) * D;
#pragma omp parallel
  {
    std::vector<float> scores, dscores, scaled, states, dS(DD);
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < int64_t(n_seq) * H; ++task) {
      const int seq = int(task / H), h = int(task % H);
      const int64_t t0 = cu_seqlens[seq], n = cu_seqlens[seq + 1] - t0, slot = task * DD;
      const int cmax = int(std::min<int64_t>(chunk, n));
      const int64_t n_chunks = cmax > 0 ? (n + cmax - 1) / cmax : 0;
      ChunkDecay dec(slopes[h], cmax);
      scores.resize(std::size_t(cmax) * cmax);
      dscores.resize(std::size_t(cmax) * cmax);
      scaled.resize(std::size_t(cmax) * D);

      // states[t] = S_{t-1}, the state entering chunk t (states[0] = S_in).
      states.assign(std::max<int64_t>(n_chunks, 1) * DD, 0.0f);
      if (state_in) std::copy(state_in + slot, state_in + slot + DD, states.begin());
      dec.set_length(cmax);  // every chunk but the last is full, and the last one's outgoing state is not needed
      for (int64_t t = 0; t + 1 < n_chunks; ++t) {
        const float* k = qkv + (t0 + t * cmax) * ld + C + h * D;
        float* S = states.data() + (t + 1) * DD;
        std::copy(S - DD, S, S);
        advance_state(S, k, k + C, ld, dec, cmax, D, scaled.data());
      }

      if (dstate_out)
        std::copy(dstate_out + slot, dstate_out + slot + DD, dS.begin());
      else
        std::fill(dS.begin(), dS.end(), 0.0f);
      for (int64_t t = n_chunks - 1; t >= 0; --t) {
        const int64_t i0 = t * cmax;
        const int c = int(std::min<int64_t>(cmax, n - i0));
        dec.set_length(c);
        const float* q = qkv + (t0 + i0) * ld + h * D;
        const float* k = q + C;
        const float* v = q + 2 * C;
        const float* dO = dout + (t0 + i0) * C + h * D;
        float* dq = dqkv + (t0 + i0) * ld + h * D;
        float* dk = dq + C;
        float* dv = dq + 2 * C;
        const float* S_prev = states.data() + t * DD;

        // Intra-chunk: A = (Q K^T) ⊙ diag, B = (dO V^T) ⊙ diag; dQ += B K, dK += B^T Q, dV += A^T dO.
        masked_scores(scores.data(), q, ld, k, ld, dec, c, cmax, D);
        masked_scores(dscores.data(), dO, C, v, ld, dec, c, cmax, D);
        gemm(Trans::no, Trans::no, c, D, c, 1.0f, dscores.data(), cmax, k, ld, 1.0f, dq, ld);
        gemm(Trans::yes, Trans::no, c, D, c, 1.0f, dscores.data(), cmax, q, ld, 1.0f, dk, ld);
        gemm(Trans::yes, Trans::no, c, D, c, 1.0f, scores.data(), cmax, dO, C, 1.0f, dv, ld);

        // Inter-chunk; a row scale commutes with the right product, so (X Y) ⊙ decay = (X ⊙ decay) Y.
        // dQ += (dO S_{t-1}^T) ⊙ q_decay
        scale_rows(scaled.data(), dO, C, dec.q(), c, D);
        gemm(Trans::no, Trans::yes, c, D, D, 1.0f, scaled.data(), D, S_prev, D, 1.0f, dq, ld);
        // dK += (V dS_t^T) ⊙ k_decay
        scale_rows(scaled.data(), v, ld, dec.k(), c, D);
        gemm(Trans::no, Trans::yes, c, D, D, 1.0f, scaled.data(), D, dS.data(), D, 1.0f, dk, ld);
        // dV += (K ⊙ k_decay) dS_t
        scale_rows(scaled.data(), k, ld, dec.k(), c, D);
        gemm(Trans::no, Trans::no, c, D, D, 1.0f, scaled.data(), D, dS.data(), D, 1.0f, dv, ld);
        // dS_{t-1} = block_decay dS_t + (Q ⊙ q_decay)^T dO   (last: every use of dS_t is above)
        scale_rows(scaled.data(), q, ld, dec.q(), c, D);
        gemm(Trans::yes, Trans::no, D, D, c, 1.0f, scaled.data(), D, dO, C, dec.block(), dS.data(), D);
      }
      if (dstate_in)
        for (int64_t e = 0; e < DD; ++e) dstate_in[slot + e] += dS[e];
    }
  }
}

}  // namespace trident::cpu
