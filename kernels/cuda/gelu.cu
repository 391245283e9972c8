#include "kernels/cuda/gelu.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/shared/bf16.h"
#include "kernels/shared/gelu.h"

namespace trident::cuda {

namespace {

template <class T>
__global__ void gelu_forward_kernel(T* out, const T* inp, int64_t n) {
  TRIDENT_GRID_STRIDE_LOOP(i, n) out[i] = from_float<T>(gelu(to_float(inp[i])));
}

template <class T>
__global__ void gelu_backward_kernel(T* dinp, const T* inp, const T* dout, int64_t n) {
  TRIDENT_GRID_STRIDE_LOOP(i, n) {
    dinp[i] = from_float<T>(to_float(dinp[i]) + to_float(dout[i]) * gelu_grad(to_float(inp[i])));
  }
}

}  // namespace

// ---- launchers ----------------------------------------------------------------------------------------------------

template <class T>
void gelu_forward(T* out, const T* inp, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  TRIDENT_LAUNCH(elementwise_blocks(n), kThreads, 0, stream, gelu_forward_kernel<T>)(out, inp, n);
  TRIDENT_CUDA_CHECK_LAUNCH();
}

template <class T>
void gelu_backward(T* dinp, const T* inp, const T* dout, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  TRIDENT_LAUNCH(elementwise_blocks(n), kThreads, 0, stream, gelu_backward_kernel<T>)(dinp, inp, dout, n);
  TRIDENT_CUDA_CHECK_LAUNCH();
}

template void gelu_forward<float>(float*, const float*, int64_t, cudaStream_t);
template void gelu_forward<bf16>(bf16*, const bf16*, int64_t, cudaStream_t);
template void gelu_backward<float>(float*, const float*, const float*, int64_t, cudaStream_t);
template void gelu_backward<bf16>(bf16*, const bf16*, const bf16*, int64_t, cudaStream_t);

}  // namespace trident::cuda
