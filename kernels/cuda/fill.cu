#include "kernels/cuda/fill.h"
#include "kernels/cuda/launch.cuh"

namespace trident::cuda {

namespace {

template <class T>
__global__ void fill_kernel(T* x, int64_t n, T value) {
  TRIDENT_GRID_STRIDE_LOOP(i, n) x[i] = value;
}

template <class To, class From>
__global__ void convert_kernel(To* dst, const From* src, int64_t n) {
  TRIDENT_GRID_STRIDE_LOOP(i, n) dst[i] = from_float<To>(to_float(src[i]));
}

}  // namespace

template <class T>
void fill(T* x, int64_t n, float value, cudaStream_t stream) {
  if (n == 0) return;
  if (value == 0.0f) {  // all-zero bytes are +0.0 in fp32 and bf16
    TRIDENT_CUDA_CHECK(cudaMemsetAsync(x, 0, sizeof(T) * static_cast<std::size_t>(n), stream));
    return;
  }
  TRIDENT_LAUNCH(elementwise_blocks(n), kThreads, 0, stream, fill_kernel<T>)(x, n, from_float<T>(value));
  TRIDENT_CUDA_CHECK_LAUNCH();
}

template void fill<float>(float*, int64_t, float, cudaStream_t);
template void fill<bf16>(bf16*, int64_t, float, cudaStream_t);

template <class To, class From>
void convert(To* dst, const From* src, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  TRIDENT_LAUNCH(elementwise_blocks(n), kThreads, 0, stream, convert_kernel<To, From>)(dst, src, n);
  TRIDENT_CUDA_CHECK_LAUNCH();
}

template void convert<bf16, float>(bf16*, const float*, int64_t, cudaStream_t);
template void convert<float, bf16>(float*, const bf16*, int64_t, cudaStream_t);

}  // namespace trident::cuda
