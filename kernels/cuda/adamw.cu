#include "kernels/cuda/adamw.h"

#include "kernels/cuda/launch.cuh"

namespace trident::cuda {

namespace {

__global__ void adamw_update_kernel(float* params, const float* grads, float* m, float* v, int64_t n,
                                    const AdamWStep step, float grad_scale) {
  TRIDENT_GRID_STRIDE_LOOP(i, n) {
    float p = params[i], mi = m[i], vi = v[i];
    trident::adamw_update(p, mi, vi, grads[i] * grad_scale, step);  // the shared per-element update
    params[i] = p;
    m[i] = mi;
    v[i] = vi;
  }
}

}  // namespace

// ---- launchers ----------------------------------------------------------------------------------------------------

void adamw_update(float* params, const float* grads, float* m, float* v, int64_t n, const AdamWStep& step,
                  float grad_scale, cudaStream_t stream) {
  if (n == 0) return;
  TRIDENT_LAUNCH(elementwise_blocks(n), kThreads, 0, stream, adamw_update_kernel)(
      params, grads, m, v, n, step, grad_scale);
  TRIDENT_CUDA_CHECK_LAUNCH();
}

}  // namespace trident::cuda
