#include "kernels/cuda/rmsnorm.h"

#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/warp.cuh"
#include "kernels/shared/bf16.h"
#include "kernels/shared/rmsnorm.h"

namespace trident::cuda {

namespace {

// The products are taken in the CPU kernel's order ((x * rrms) * gate, (dout * gate) * x, (dout * x) * rrms), so
// the two backends differ only in the order of the row sums.
template <class T>
__global__ void rmsnorm_forward_kernel(T* out, float* rrms, const T* inp, const T* gate, int64_t rows, int D) {
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
    if (gate == nullptr) {
      for (int i = lane; i < D; i += kWarp) y[i] = from_float<T>(to_float(x[i]) * inv);
    } else {
      const T* u = gate + r * D;
      for (int i = lane; i < D; i += kWarp) y[i] = from_float<T>(to_float(x[i]) * inv * to_float(u[i]));
    }
    if (lane == 0) rrms[r] = inv;
  }
}

template <class T>
__global__ void rmsnorm_backward_kernel(T* dinp, T* dgate, const T* dout, const T* inp, const T* gate,
                                        const float* rrms, int64_t rows, int D) {
  const int lane = threadIdx.x % kWarp;
  TRIDENT_WARP_PER_ROW_LOOP(r, rows) {
    const T* x = inp + r * D;
    const T* dy = dout + r * D;
    const float inv = rrms[r];
    float dot = 0.0f;
    if (gate == nullptr) {
      for (int i = lane; i < D; i += kWarp) dot += to_float(dy[i]) * to_float(x[i]);
    } else {
      // One pass reads the row for the dot product and adds dgate, which needs no row statistic beyond rrms.
      const T* u = gate + r * D;
      T* du = dgate + r * D;
      for (int i = lane; i < D; i += kWarp) {
        const float g = to_float(dy[i]), v = to_float(x[i]);
        dot += g * to_float(u[i]) * v;
        du[i] = from_float<T>(to_float(du[i]) + g * v * inv);
      }
    }
    const float coef = rmsnorm_grad_coef(inv, warp_sum(dot), D);
    T* dx = dinp + r * D;
    if (gate == nullptr) {
      for (int i = lane; i < D; i += kWarp) {
        dx[i] = from_float<T>(to_float(dx[i]) + rmsnorm_dinp(to_float(dy[i]), to_float(x[i]), inv, coef));
      }
    } else {
      const T* u = gate + r * D;
      for (int i = lane; i < D; i += kWarp) {
        const float g = to_float(dy[i]) * to_float(u[i]);
        dx[i] = from_float<T>(to_float(dx[i]) + rmsnorm_dinp(g, to_float(x[i]), inv, coef));
      }
    }
  }
}

}  // namespace

// ---- launchers ----------------------------------------------------------------------------------------------------

template <class T>
void rmsnorm_forward(T* out, float* rrms, const T* inp, const T* gate, int64_t rows, int D, cudaStream_t stream) {
  if (rows == 0 || D == 0) return;
  TRIDENT_LAUNCH(row_kernel_blocks(rows), kThreads, 0, stream, rmsnorm_forward_kernel<T>)(out, rrms, inp, gate, rows,
                                                                                          D);
  TRIDENT_CUDA_CHECK_LAUNCH();
}

template <class T>
void rmsnorm_backward(T* dinp, T* dgate, const T* dout, const T* inp, const T* gate, const float* rrms, int64_t rows,
                      int D, cudaStream_t stream) {
  if (rows == 0 || D == 0) return;
  TRIDENT_LAUNCH(row_kernel_blocks(rows), kThreads, 0, stream, rmsnorm_backward_kernel<T>)(
      dinp, gate == nullptr ? nullptr : dgate, dout, inp, gate, rrms, rows, D);
  TRIDENT_CUDA_CHECK_LAUNCH();
}

template void rmsnorm_forward<float>(float*, float*, const float*, const float*, int64_t, int, cudaStream_t);
template void rmsnorm_forward<bf16>(bf16*, float*, const bf16*, const bf16*, int64_t, int, cudaStream_t);
template void rmsnorm_backward<float>(float*, float*, const float*, const float*, const float*, const float*, int64_t,
                                      int, cudaStream_t);
template void rmsnorm_backward<bf16>(bf16*, bf16*, const bf16*, const bf16*, const bf16*, const float*, int64_t, int,
                                     cudaStream_t);

}  // namespace trident::cuda
