#pragma once
// Fused AdamW on the device over a flat range of parameters (one call per parameter group: decay or no decay); the
// per-element update is kernels/shared/adamw.h, the arithmetic the CPU backend also runs.
//   params, grads, m, v (n) fp32 (master parameters, their gradients and the moments). grad_scale multiplies each
//   gradient first (the clipping coefficient).
// `step` carries the hyper-parameters and this step's bias corrections: build it on the host with cpu::adamw_step
// (host bookkeeping; the kernel takes it by value). Asynchronous on `stream`.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/shared/adamw.h"

namespace trident::cuda {

void adamw_update(float* params, const float* grads, float* m, float* v, int64_t n, const AdamWStep& step,
                  float grad_scale, cudaStream_t stream);

}  // namespace trident::cuda
