#pragma once
// Softmax cross-entropy over the vocabulary on the device, fused as in kernels/cpu/crossentropy.h:
//   logits (N, V) of storage type T (float or bf16);  targets (N) int32 in [0, V), or -1 for a token without a
//   target (loss 0, zero gradient);  losses (N) fp32 = logsumexp(logits[t]) - logits[t, targets[t]];  weight fp32.
// One block per row: a single pass over the row builds the online (max, sum of exp) statistics, merged across the
// block in a fixed order; the backward then overwrites the row with its gradient in a second pass.
//
// A target outside [0, V) other than -1 cannot throw from the device: that row gets a NaN loss (and, in the fused
// backward, a NaN gradient row), and the kernel records the lowest such token in a device flag. The launcher reads
// the flag after the kernel and throws the CPU kernel's RuntimeError naming that token and its target. Reading the
// flag waits for the stream (cudaStreamSynchronize), so these launchers return with the work finished, and they
// cannot be captured into a CUDA graph; cross-entropy runs once per micro-batch, so the sync costs little.
#include <cuda_runtime.h>

#include <cstdint>

namespace trident::cuda {

template <class T>
void crossentropy_forward(float* losses, const T* logits, const int32_t* targets, int64_t N, int V,
                          cudaStream_t stream);

// Writes losses and overwrites the logits with the gradient of sum_t weight[t] * loss[t], i.e.
// weight[t] * (softmax(logits[t]) - onehot(targets[t])), stored as T.
template <class T>
void crossentropy_fused_backward(float* losses, T* logits_to_dlogits, const int32_t* targets, const float* weight,
                                 int64_t N, int V, cudaStream_t stream);

namespace detail {
// The error path's message, formatted by the host compiler (nvcc cannot compile fmt): crossentropy_targets.cpp.
[[noreturn]] void throw_crossentropy_target_error(int32_t target, int64_t token, int V);
}  // namespace detail

}  // namespace trident::cuda
