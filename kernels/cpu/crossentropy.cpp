#include "kernels/cpu/crossentropy.h"

#include <cmath>

#include "kernels/common/error.h"
#include "kernels/shared/exp.h"
#include "kernels/shared/softmax.h"

namespace trident::cpu {

namespace {
void check_targets(const int32_t* targets, int64_t N, int V) {
  for (int64_t t = 0; t < N; ++t) {
    if (targets[t] < -1 || targets[t] >= V)
      throw_runtime_error("cross-entropy: target {} of token {} is outside the vocabulary [0, {}) (and not -1)",
                          targets[t], t, V);
  }
}
}  // namespace

void crossentropy_forward(float* losses, const float* logits, const int32_t* targets, int64_t N, int V) {
  check_targets(targets, N, V);
#pragma omp parallel for schedule(guided)
  for (int64_t t = 0; t < N; ++t) {
    const float* x = logits + t * V;
    losses[t] = targets[t] < 0 ? 0.0f : row_logsumexp(x, V) - x[targets[t]];
  }
}

void crossentropy_fused_backward(float* losses, float* logits_to_dlogits, const int32_t* targets,
                                 const float* weight, int64_t N, int V) {
  check_targets(targets, N, V);
#pragma omp parallel for schedule(guided)
  for (int64_t t = 0; t < N; ++t) {
    float* x = logits_to_dlogits + t * V;
    if (targets[t] < 0) {
      for (int i = 0; i < V; ++i) x[i] = 0.0f;
      losses[t] = 0.0f;
      continue;
    }
    float lse = row_logsumexp(x, V);
    losses[t] = lse - x[targets[t]];
    float w = weight[t];
#pragma omp simd
    for (int i = 0; i < V; ++i) x[i] = w * kernel_exp(x[i] - lse);
    x[targets[t]] -= w;
  }
}

}  // namespace trident::cpu
