#include "kernels/cuda/rmsnorm.h"

#include <algorithm>

#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/warp.cuh"
#include "kernels/shared/bf16.h"
#include "kernels/shared/rmsnorm.h"

namespace trident::cuda {

namespace {

template <class T>
__global__ void rmsnorm_forward_kernel(T* out, float* rrms, const T* inp, int64_t rows, int D) {
  const int lane = threadIdx.x % kWarp;
  TRIDENT_WARP_PER_ROW_LOOP(r, rows) {
    const T* x = inp + r * D;
    float sq = 0.0f;
    for (int i = lane; i < D; i += kWarp) {
      const float v = to_float(x[i]);
      sq += v * v;
    }
    const float inv = rmsnorm_rrms(warp_sum(sq), D);
    T* y = out + r * D;
    for (int i = lane; i < D; i += kWarp) y[i] = from_float<T>(to_float(x[i]) * inv);
    if (lane == 0) rrms[r] = inv;
  }
}

template <class T>
__global__ void rmsnorm_backward_kernel(T* dinp, const T* dout, const T* inp, const float* rrms, int64_t rows,
                                        int D) {
  const int lane = threadIdx.x % kWarp;
  TRIDENT_WARP_PER_ROW_LOOP(r, rows) {
    const T* x = inp + r * D;
    const T* dy = dout + r * D;
    float dot = 0.0f;
    for (int i = lane; i < D; i += kWarp) dot += to_float(dy[i]) * to_float(x[i]);
    const float inv = rrms[r], coef = rmsnorm_grad_coef(inv, warp_sum(dot), D);
    T* dx = dinp + r * D;
    for (int i = lane; i < D; i += kWarp) {
      dx[i] = from_float<T>(to_float(dx[i]) + rmsnorm_dinp(to_float(dy[i]), to_float(x[i]), inv, coef));
    }
  }
}

}  // namespace

// ---- launchers ----------------------------------------------------------------------------------------------------

template <class T>
void rmsnorm_forward(T* out, float* rrms, const T* inp, int64_t rows, int D, cudaStream_t stream) {
  if (rows == 0 || D == 0) return;
  TRIDENT_LAUNCH(row_kernel_blocks(rows), kThreads, 0, stream, rmsnorm_forward_kernel<T>)(out, rrms, inp, rows, D);
  TRIDENT_CUDA_CHECK_LAUNCH();
}

template <class T>
void rmsnorm_backward(T* dinp, const T* dout, const T* inp, const float* rrms, int64_t rows, int D,
                      cudaStream_t stream) {
  if (rows == 0 || D == 0) return;
  TRIDENT_LAUNCH(row_kernel_blocks(rows), kThreads, 0, stream, rmsnorm_backward_kernel<T>)(
      dinp, dout, inp, rrms, rows, D);
  TRIDENT_CUDA_CHECK_LAUNCH();
}

template void rmsnorm_forward<float>(float*, float*, const float*, int64_t, int, cudaStream_t);
template void rmsnorm_forward<bf16>(bf16*, float*, const bf16*, int64_t, int, cudaStream_t);
template void rmsnorm_backward<float>(float*, const float*, const float*, const float*, int64_t, int, cudaStream_t);
template void rmsnorm_backward<bf16>(bf16*, const bf16*, const bf16*, const float*, int64_t, int, cudaStream_t);

}  // namespace trident::cuda
