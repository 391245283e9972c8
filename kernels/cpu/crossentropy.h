#pragma once
// Softmax cross-entropy over the vocabulary, fused: the probabilities never exist as a separate tensor.
//   logits (N, V);  targets (N) int32 in [0, V), or -1 for a token without a target (loss 0, no gradient);
//   losses (N) = logsumexp(logits[t]) - logits[t, targets[t]]
// A target outside [0, V) other than -1 is a RuntimeError naming the token and the value.
#include <cstdint>

namespace trident::cpu {

void crossentropy_forward(float* losses, const float* logits, const int32_t* targets, int64_t N, int V);

// Training path in one pass over the logits: writes losses and overwrites the logits with the gradient of
// sum_t weight[t] * loss[t], i.e. weight[t] * (softmax(logits[t]) - onehot(targets[t])). The weights carry the
// loss normalisation (e.g. 1 / global token count), so no separate scaling pass is needed.
void crossentropy_fused_backward(float* losses, float* logits_to_dlogits, const int32_t* targets,
                                 const float* weight, int64_t N, int V);

}  // namespace trident::cpu
