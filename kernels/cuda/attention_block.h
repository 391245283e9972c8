#pragma once
// Ring Attention's block math on the device: the twin of kernels/cpu/attention_block.h, same arguments, layouts and
// definitions, plus the trailing stream. Every call is asynchronous on `stream`; every pointer (doc_begin too) is
// device memory. fp32 only (Ring Attention takes fp32 activations; bf16 layers widen them first).
// Head width: 1 <= D <= 128, as kernels/cuda/attention_softmax.h. Deterministic: no atomics; each output element
// is written by one thread, in a fixed order.
#include <cuda_runtime.h>

#include <cstdint>

namespace trident::cuda {

void attention_block_forward(float* m, float* l, float* acc, const float* q, int64_t ld_q, int64_t n, int64_t q_pos0,
                             const int64_t* doc_begin, const float* kv, int64_t n_k, int64_t k_pos0, int H, int D,
                             cudaStream_t stream);

void attention_block_finish(float* out, float* lse, const float* m, const float* l, const float* acc, int64_t n,
                            int H, int D, cudaStream_t stream);

void attention_block_delta(float* delta, const float* out, const float* dout, int64_t n, int H, int D,
                           cudaStream_t stream);

void attention_block_backward(float* dq, int64_t ld_dq, float* dkv, const float* q, int64_t ld_q, int64_t n,
                              int64_t q_pos0, const int64_t* doc_begin, const float* dout, const float* lse,
                              const float* delta, const float* kv, int64_t n_k, int64_t k_pos0, int H, int D,
                              cudaStream_t stream);

}  // namespace trident::cuda
