#pragma once
// Causal linear attention with a per-head decay, chunked form, on the device: the twin of
// kernels/cpu/attention_linear.h (same arguments, layouts, state convention and `chunk`, plus the trailing stream;
// docs/methods.md §1, "Linear attention with decay", has the equations). Every call is asynchronous on `stream`.
//
//   qkv        (N, 3C)            T      [q | k | v], C = H*D
//   slopes     (H)                fp32   decay slope s_h > 0 (lambda_h = exp(-s_h))
//   state_in   (n_seq, H, D, D)   fp32   initial state of each sequence, or nullptr for zeros
//   state_out  (n_seq, H, D, D)   fp32   final state of each sequence, or nullptr if not wanted
//   out        (N, C)             T
//   cu_seqlens (n_seq + 1)        int32  a DEVICE pointer, like every other pointer here
// T is the storage type of qkv, out, dout and dqkv (float or bf16); the arithmetic is fp32, and states, state
// gradients and slopes stay fp32 (docs/methods.md §1). D >= 1 with no other restriction than shared memory
// (~58 KiB at D = 128; D = 256 needs ~107 KiB, which sm_80 and sm_90 allow). Deterministic: no atomics.
#include <cuda_runtime.h>

#include <cstdint>

namespace trident::cuda {

template <class T>
void attention_linear_forward(T* out, float* state_out, const T* qkv, const float* slopes, const float* state_in,
                              const int32_t* cu_seqlens, int n_seq, int64_t N, int H, int D, int chunk,
                              cudaStream_t stream);

// Given dout (N, C) and dstate_out (n_seq, H, D, D; nullptr = zeros), accumulates into dqkv (N, 3C) and, when
// dstate_in is not nullptr, into dstate_in (n_seq, H, D, D). Recomputes the per-chunk states from qkv and state_in.
template <class T>
void attention_linear_backward(T* dqkv, float* dstate_in, const T* dout, const float* dstate_out, const T* qkv,
                               const float* slopes, const float* state_in, const int32_t* cu_seqlens, int n_seq,
                               int64_t N, int H, int D, int chunk, cudaStream_t stream);

}  // namespace trident::cuda
