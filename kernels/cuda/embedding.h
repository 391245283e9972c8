#pragma once
// Token (+ learned position) embedding on the device.
//   tokens, positions (N) int32;  wte (V, C), wpe (P, C) or nullptr fp32 (parameters);  out, dout (N, C) in the
//   storage type T (float or bf16);  dwte, dwpe fp32 (parameter gradients). Arithmetic is fp32.
// out[t] = wte[tokens[t]] + wpe[positions[t]]; positions is read only when wpe is given. Every call is asynchronous
// on `stream`.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace trident::cuda {

template <class T>
void embedding_forward(T* out, const int32_t* tokens, const int32_t* positions, const float* wte, const float* wpe,
                       int64_t N, int C, cudaStream_t stream);

// dwte[tokens[t]] += dout[t]; dwpe[positions[t]] += dout[t] (dwpe may be nullptr). Deterministic, and the same sums
// as the CPU kernel bit for bit: the token ids are sorted stably (CUB radix sort, so equal ids keep token order),
// then for each run of equal ids one warp per 64 channels adds the run's dout rows onto the gradient row in token
// order. A very frequent id is one long run, walked by C / 64 warps. N < 2^31. The scratch
// (embedding_backward_scratch_bytes) is taken from the device's memory pool with cudaMallocAsync and returned with
// cudaFreeAsync, both ordered on `stream`.
template <class T>
void embedding_backward(float* dwte, float* dwpe, const T* dout, const int32_t* tokens, const int32_t* positions,
                        int64_t N, int C, cudaStream_t stream);

// The bytes of scratch embedding_backward takes for N tokens: 3 N int32 plus CUB's sort storage, each 256-aligned.
std::size_t embedding_backward_scratch_bytes(int64_t N);

}  // namespace trident::cuda
