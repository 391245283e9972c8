#pragma once
// The math of one rank, no messages (private to parallel/lasp): the local kernel calls from a zero state and the
// corrections that fold a neighbour's state into the first or last local piece (docs/methods.md §1, chunked form,
// with the piece as the chunk). qkv, out and their gradients are in the backend's memory; states (H, D, D) and their
// gradients in host memory. Layouts as in lasp.h.
#include <cmath>
#include <cstdint>

#include "kernels/backend.h"
#include "parallel/lasp/lasp.h"

namespace trident::lasp {

// out = the kernel on every local piece from a zero state. When state_last is not null it receives (H, D, D) the
// state leaving the last piece (zeros for a rank without tokens).
void local_forward(Backend& backend, float* out, float* state_last, const float* qkv, const LaspCache& cache);

// dqkv += the kernel's backward on every local piece, with zero dstate_out. Piece 0 reads cache.state_in when the
// shard continues a document (so its dq is complete); when dstate_first is not null, += that piece's dS_in (H, D, D).
void local_backward(Backend& backend, float* dqkv, float* dstate_first, const float* dout, const float* qkv,
                    const LaspCache& cache);

// Inter term of piece 0 (rows i = 0..n0-1): o_i += (q_i * lambda^i) S. The state is weighted to the piece's first
// token, as the kernel's state_in.
void add_state_to_output(Backend& backend, float* out, const float* qkv, const float* S, const LaspCache& cache);

// Gradient of the state leaving the last piece (rows j = 0..n-1 of it, weights w_j = lambda^(n-j)):
// dk_j += w_j v_j dS^T, dv_j += w_j k_j dS.
void add_state_grad_to_kv(Backend& backend, float* dqkv, const float* qkv, const float* dS, const LaspCache& cache);

// lambda^n = exp(-s n), the decay of a state crossing n tokens (one expression, so both variants round alike).
inline float pass_decay(float s, int64_t n) { return std::exp(-s * float(n)); }

// dst_h += lambda_h^n src_h for every head (H, D, D): a state, or a state gradient, crossing n tokens.
void add_decayed(float* dst, const float* src, const float* slopes, int64_t n, int H, int D);

// dst_h = a_h dst_h + src_h (H, D, D), a (H): one Horner step over a rank.
void horner_step(float* dst, const float* a, const float* src, int H, int D);

}  // namespace trident::lasp
