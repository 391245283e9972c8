#include "kernels/cuda/column_sums.cuh"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/linear.h"
#include "kernels/shared/bf16.h"

namespace trident::cuda {

namespace {

template <class T>
__global__ void broadcast_bias_kernel(T* out, const T* bias, int64_t N, int OC) {
  TRIDENT_GRID_STRIDE_LOOP(i, N * OC) out[i] = bias[i % OC];
}

}  // namespace

std::size_t bias_grad_scratch_bytes(int64_t N, int OC) { return column_sums_scratch_bytes(N, OC); }

// ---- launchers ----------------------------------------------------------------------------------------------------

template <class T>
void linear_forward(T* out, const T* inp, const T* weight, const T* bias, int64_t N, int C, int OC,
                    cudaStream_t stream) {
  if (N == 0 || OC == 0) return;
  float beta = 0.0f;
  if (bias != nullptr) {  // start from the broadcast bias and let the GEMM accumulate onto it, as the CPU kernel does
    TRIDENT_LAUNCH(elementwise_blocks(N * OC), kThreads, 0, stream, broadcast_bias_kernel<T>)(out, bias, N, OC);
    TRIDENT_CUDA_CHECK_LAUNCH();
    beta = 1.0f;
  }
  gemm(Trans::no, Trans::no, N, OC, C, 1.0f, inp, C, weight, OC, beta, out, OC, stream);
}

template <class T>
void linear_backward(T* dinp, float* dweight, float* dbias, const T* dout, const T* inp, const T* weight, int64_t N,
                     int C, int OC, cudaStream_t stream) {
  if (dinp != nullptr) gemm(Trans::no, Trans::yes, N, C, OC, 1.0f, dout, OC, weight, OC, 1.0f, dinp, C, stream);
  gemm(Trans::yes, Trans::no, C, OC, N, 1.0f, inp, C, dout, OC, 1.0f, dweight, OC, stream);
  if (dbias != nullptr) add_column_sums(dbias, RowMajor<T>{dout, OC}, N, OC, stream);
}

template void linear_forward<float>(float*, const float*, const float*, const float*, int64_t, int, int,
                                    cudaStream_t);
template void linear_forward<bf16>(bf16*, const bf16*, const bf16*, const bf16*, int64_t, int, int, cudaStream_t);
template void linear_backward<float>(float*, float*, float*, const float*, const float*, const float*, int64_t, int,
                                     int, cudaStream_t);
template void linear_backward<bf16>(bf16*, float*, float*, const bf16*, const bf16*, const bf16*, int64_t, int, int,
                                    cudaStream_t);

}  // namespace trident::cuda
