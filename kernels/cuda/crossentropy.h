#pragma once
// Softmax cross-entropy over the vocabulary on the device, fused as in kernels/cpu/crossentropy.h:
//   logits (N, V) of storage type T (float or bf16);  targets (N) int32 in [0, V), or -1 for a token without a
//   target (loss 0, zero gradient);  losses (N) fp32 = logsumexp(logits[t]) - logits[t, targets[t]];  weight fp32.
// One block per row: a single pass over the row builds the online (max, sum of exp) statistics, merged across the
// block in a fixed order; the backward then overwrites the row with its gradient in a second pass.
//
// A target outside [0, V) other than -1 cannot throw from the device: that row gets a NaN loss (and, in the fused
// backward, a NaN gradient row). With TargetCheck::device the kernel records the lowest such token in a device flag,
// and the launcher reads it after the kernel and throws the CPU kernel's RuntimeError naming that token and its
// target; reading the flag waits for the stream (cudaStreamSynchronize), so those calls return with the work
// finished. With TargetCheck::caller the caller has checked the targets on the host (GPT::check_batch does, once a
// batch), and the launcher neither allocates the flag nor waits: the CUDA backend's LM head runs a chunk of tokens
// at a time, and a wait per chunk was a host round trip per 128 tokens.
#include <cuda_runtime.h>

#include <cstdint>

namespace trident::cuda {

// Who rejects a target outside the vocabulary: the launcher (from a device flag, waiting for the stream) or the
// caller, before the call.
enum class TargetCheck : bool { device, caller };

template <class T>
void crossentropy_forward(float* losses, const T* logits, const int32_t* targets, int64_t N, int V,
                          cudaStream_t stream, TargetCheck check = TargetCheck::device);

// Writes losses and overwrites the logits with the gradient of sum_t weight[t] * loss[t], i.e.
// weight[t] * (softmax(logits[t]) - onehot(targets[t])), stored as T.
template <class T>
void crossentropy_fused_backward(float* losses, T* logits_to_dlogits, const int32_t* targets, const float* weight,
                                 int64_t N, int V, cudaStream_t stream, TargetCheck check = TargetCheck::device);

namespace detail {
// The error path's message, formatted by the host compiler (nvcc cannot compile fmt): crossentropy_targets.cpp.
[[noreturn]] void throw_crossentropy_target_error(int32_t target, int64_t token, int V);
}  // namespace detail

}  // namespace trident::cuda
