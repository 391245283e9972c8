#pragma once
// Causal softmax attention over a packed batch of variable-length sequences on the device (FlashAttention-2 style):
// the twin of kernels/cpu/attention_softmax.h, same arguments, layouts and definitions of out and lse, plus the
// trailing stream. Every call is asynchronous on `stream`.
//
//   qkv  (N, 3C)  T      [q | k | v], head h at columns h*D..h*D+D-1 of each part, C = H*D
//   out  (N, C)   T
//   lse  (H, N)   fp32   log-sum-exp over keys of the scaled scores (scale = 1/sqrt(D)) of each query
//   cu_seqlens (n_seq + 1) int32, a DEVICE pointer; no host copy is needed (blocks find their sequence by a binary
//                search over it).
// T is the storage type of qkv, out, dout and dqkv (float or bf16); the arithmetic is fp32 and lse stays fp32.
// Head width: 1 <= D <= 128 (any D, not only multiples of 4 or 32); larger D throws.
// Deterministic: no atomics; every output element is written by one thread of one block.
#include <cuda_runtime.h>

#include <cstdint>

namespace trident::cuda {

template <class T>
void attention_softmax_forward(T* out, float* lse, const T* qkv, const int32_t* cu_seqlens, int n_seq, int64_t N,
                               int H, int D, cudaStream_t stream);

// Accumulates into dqkv (N, 3C). Needs the forward's out and lse.
template <class T>
void attention_softmax_backward(T* dqkv, const T* dout, const T* qkv, const T* out, const float* lse,
                                const int32_t* cu_seqlens, int n_seq, int64_t N, int H, int D, cudaStream_t stream);

}  // namespace trident::cuda
