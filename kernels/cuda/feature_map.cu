#include "kernels/cuda/feature_map.h"

#include "kernels/cuda/launch.cuh"
#include "kernels/shared/bf16.h"

namespace trident::cuda {

namespace {

// Element i of the (N, 2C) q|k block (width = 2C) sits at row i / 2C, column i % 2C of the (N, 3C) qkv.
__device__ __forceinline__ int64_t qkv_index(int64_t i, int64_t width) {
  return i / width * (width + width / 2) + i % width;
}

template <class T>
__global__ void feature_map_forward_kernel(T* qkv, T* qk_pre, int64_t n, int64_t width, FeatureMap map) {
  TRIDENT_GRID_STRIDE_LOOP(i, n) {
    const int64_t j = qkv_index(i, width);
    const T x = qkv[j];
    qk_pre[i] = x;
    qkv[j] = from_float<T>(feature_map(to_float(x), map));
  }
}

template <class T>
__global__ void feature_map_backward_kernel(T* dqkv, const T* qk_pre, int64_t n, int64_t width, FeatureMap map) {
  TRIDENT_GRID_STRIDE_LOOP(i, n) {
    const int64_t j = qkv_index(i, width);
    dqkv[j] = from_float<T>(to_float(dqkv[j]) * feature_map_grad(to_float(qk_pre[i]), map));
  }
}

}  // namespace

// ---- launchers ----------------------------------------------------------------------------------------------------

template <class T>
void feature_map_forward(T* qkv, T* qk_pre, int64_t N, int C, FeatureMap map, cudaStream_t stream) {
  const int64_t width = 2 * int64_t{C}, n = N * width;
  if (n == 0) return;
  TRIDENT_LAUNCH(elementwise_blocks(n), kThreads, 0, stream, feature_map_forward_kernel<T>)(qkv, qk_pre, n, width,
                                                                                            map);
  TRIDENT_CUDA_CHECK_LAUNCH();
}

template <class T>
void feature_map_backward(T* dqkv, const T* qk_pre, int64_t N, int C, FeatureMap map, cudaStream_t stream) {
  const int64_t width = 2 * int64_t{C}, n = N * width;
  if (n == 0) return;
  TRIDENT_LAUNCH(elementwise_blocks(n), kThreads, 0, stream, feature_map_backward_kernel<T>)(dqkv, qk_pre, n, width,
                                                                                             map);
  TRIDENT_CUDA_CHECK_LAUNCH();
}

template void feature_map_forward<float>(float*, float*, int64_t, int, FeatureMap, cudaStream_t);
template void feature_map_forward<bf16>(bf16*, bf16*, int64_t, int, FeatureMap, cudaStream_t);
template void feature_map_backward<float>(float*, const float*, int64_t, int, FeatureMap, cudaStream_t);
template void feature_map_backward<bf16>(bf16*, const bf16*, int64_t, int, FeatureMap, cudaStream_t);

}  // namespace trident::cuda
