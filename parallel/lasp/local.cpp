#include "parallel/lasp/local.h"

#include <cmath>

namespace trident::lasp {

// The kernel takes a slice of cu_seqlens as it stands: offsets stay relative to the rank's first token, so a call
// on pieces [a, b) passes cu_seqlens + a and the same base pointers. States cross between the host (where they are
// combined and sent) and the backend (where the kernels read and write them) through the cache's staging arrays.
void local_forward(Backend& backend, float* out, float* state_last, const float* qkv, const LaspCache& c) {
  const int P = c.shard.n_pieces();
  const int32_t* cu = c.cu_on_backend.data();
  const float* slopes = c.slopes_on_backend;
  const int64_t n = c.shard.n_local(), SS = int64_t(c.H) * c.D * c.D;
  if (!state_last) {
    backend.attention_linear_forward(out, nullptr, qkv, slopes, nullptr, cu, P, n, c.H, c.D, c.chunk);
    return;
  }
  if (P == 0) return;  // the caller zeroed state_last
  if (P > 1) backend.attention_linear_forward(out, nullptr, qkv, slopes, nullptr, cu, P - 1, n, c.H, c.D, c.chunk);
  float* S = c.state_on_backend.data(SS);
  backend.attention_linear_forward(out, S, qkv, slopes, nullptr, cu + P - 1, 1, n, c.H, c.D, c.chunk);
  c.state_on_backend.download(state_last, SS);
}

void local_backward(Backend& backend, float* dqkv, float* dstate_first, const float* dout, const float* qkv,
                    const LaspCache& c) {
  const int P = c.shard.n_pieces();
  const int32_t* cu = c.cu_on_backend.data();
  const float* slopes = c.slopes_on_backend;
  const int64_t n = c.shard.n_local(), SS = int64_t(c.H) * c.D * c.D;
  if (P == 0) return;
  if (!c.shard.from_prev && !dstate_first) {
    backend.attention_linear_backward(dqkv, nullptr, dout, nullptr, qkv, slopes, nullptr, cu, P, n, c.H, c.D,
                                      c.chunk);
    return;
  }
  // Piece 0 alone, so that state_in and dstate_in, (1, H, D, D) in the kernel's layout, belong to it. The kernel
  // adds into dstate_in, so it starts from the caller's values.
  const float* S_in = c.shard.from_prev ? c.state_on_backend.upload(c.state_in.data(), SS) : nullptr;
  float* dS_in = dstate_first ? c.dstate_on_backend.upload(dstate_first, SS) : nullptr;
  backend.attention_linear_backward(dqkv, dS_in, dout, nullptr, qkv, slopes, S_in, cu, 1, n, c.H, c.D, c.chunk);
  if (dstate_first) c.dstate_on_backend.download(dstate_first, SS);
  if (P > 1)
    backend.attention_linear_backward(dqkv, nullptr, dout, nullptr, qkv, slopes, nullptr, cu + 1, P - 1, n, c.H, c.D,
                                      c.chunk);
}

void add_state_to_output(Backend& backend, float* out, const float* qkv, const float* S, const LaspCache& c) {
  if (c.shard.n_pieces() == 0) return;
  const int H = c.H, D = c.D;
  const int64_t C = int64_t(H) * D, n0 = c.shard.cu_seqlens[1], DD = int64_t(D) * D;
  const float* S_b = c.state_on_backend.upload(S, H * DD);
  float* scaled = c.rows.data(n0 * D);
  for (int h = 0; h < H; ++h) {
    backend.decay_rows(scaled, qkv + h * D, 3 * C, n0, D, c.slopes[h], 0, +1);  // q_i * lambda^i
    backend.gemm(Trans::no, Trans::no, n0, D, D, 1.0f, scaled, D, S_b + h * DD, D, 1.0f, out + h * D, C);
  }
}

void add_state_grad_to_kv(Backend& backend, float* dqkv, const float* qkv, const float* dS, const LaspCache& c) {
  const int P = c.shard.n_pieces();
  if (P == 0) return;
  const int H = c.H, D = c.D;
  const int64_t C = int64_t(H) * D, ld = 3 * C, DD = int64_t(D) * D;
  const int64_t t0 = c.shard.cu_seqlens[P - 1], n = c.shard.cu_seqlens[P] - t0;
  const float* dS_b = c.dstate_on_backend.upload(dS, H * DD);
  float* scaled = c.rows.data(n * D);
  for (int h = 0; h < H; ++h) {
    const float* k = qkv + t0 * ld + C + h * D;
    float* dk = dqkv + t0 * ld + C + h * D;
    // w_j = lambda^(n-j) = exp(-s (n - j)): never exp(+s j) (docs/methods.md §1: it overflows).
    backend.decay_rows(scaled, k + C, ld, n, D, c.slopes[h], n, -1);  // v_j * w_j
    backend.gemm(Trans::no, Trans::yes, n, D, D, 1.0f, scaled, D, dS_b + h * DD, D, 1.0f, dk, ld);
    backend.decay_rows(scaled, k, ld, n, D, c.slopes[h], n, -1);  // k_j * w_j
    backend.gemm(Trans::no, Trans::no, n, D, D, 1.0f, scaled, D, dS_b + h * DD, D, 1.0f, dk + C, ld);
  }
}

void add_decayed(float* dst, const float* src, const float* slopes, int64_t n, int H, int D) {
  const int64_t DD = int64_t(D) * D;
  for (int h = 0; h < H; ++h) {
    const float a = pass_decay(slopes[h], n);
    for (int64_t e = 0; e < DD; ++e) dst[h * DD + e] += a * src[h * DD + e];
  }
}

void horner_step(float* dst, const float* a, const float* src, int H, int D) {
  const int64_t DD = int64_t(D) * D;
  for (int h = 0; h < H; ++h)
    for (int64_t e = 0; e < DD; ++e) dst[h * DD + e] = a[h] * dst[h * DD + e] + src[h * DD + e];
}

}  // namespace trident::lasp
