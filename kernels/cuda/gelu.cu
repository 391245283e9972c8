#include "kernels/cuda/column_sums.cuh"
#include "kernels/cuda/gelu.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/shared/bf16.h"
#include "kernels/shared/gelu.h"

namespace trident::cuda {

namespace {

template <class T>
__global__ void bias_gelu_forward_kernel(T* pre, T* out, const T* bias, int64_t N, int OC) {
  TRIDENT_GRID_STRIDE_LOOP(i, N * OC) {
    T p = pre[i];
    if (bias != nullptr) {
      p = from_float<T>(to_float(p) + to_float(bias[i % OC]));
      pre[i] = p;
    }
    out[i] = from_float<T>(gelu(to_float(p)));
  }
}

template <class T>
__device__ float gelu_grad_into(T* dpre, const T* pre, const T* dout, int64_t i) {
  const float d = to_float(dout[i]) * gelu_grad(to_float(pre[i]));
  dpre[i] = from_float<T>(d);
  return d;
}

template <class T>
__global__ void gelu_backward_kernel(T* dpre, const T* pre, const T* dout, int64_t n) {
  TRIDENT_GRID_STRIDE_LOOP(i, n) gelu_grad_into(dpre, pre, dout, i);
}

// The column-sum value of the fused backward: computes and stores dpre[r, c], returns it in fp32.
template <class T>
struct GeluGrad {
  T* dpre;
  const T* pre;
  const T* dout;
  int OC;
  __device__ float operator()(int64_t r, int c) const { return gelu_grad_into(dpre, pre, dout, r * OC + c); }
};

}  // namespace

// ---- launchers ----------------------------------------------------------------------------------------------------

template <class T>
void bias_gelu_forward(T* pre, T* out, const T* bias, int64_t N, int OC, cudaStream_t stream) {
  if (N == 0 || OC == 0) return;
  TRIDENT_LAUNCH(elementwise_blocks(N * OC), kThreads, 0, stream, bias_gelu_forward_kernel<T>)(pre, out, bias, N, OC);
  TRIDENT_CUDA_CHECK_LAUNCH();
}

template <class T>
void bias_gelu_backward(T* dpre, float* dbias, const T* pre, const T* dout, int64_t N, int OC, cudaStream_t stream) {
  if (N == 0 || OC == 0) return;
  if (dbias != nullptr) return add_column_sums(dbias, GeluGrad<T>{dpre, pre, dout, OC}, N, OC, stream);
  TRIDENT_LAUNCH(elementwise_blocks(N * OC), kThreads, 0, stream, gelu_backward_kernel<T>)(dpre, pre, dout, N * OC);
  TRIDENT_CUDA_CHECK_LAUNCH();
}

template void bias_gelu_forward<float>(float*, float*, const float*, int64_t, int, cudaStream_t);
template void bias_gelu_forward<bf16>(bf16*, bf16*, const bf16*, int64_t, int, cudaStream_t);
template void bias_gelu_backward<float>(float*, float*, const float*, const float*, int64_t, int, cudaStream_t);
template void bias_gelu_backward<bf16>(bf16*, float*, const bf16*, const bf16*, int64_t, int, cudaStream_t);

}  // namespace trident::cuda
