#include <algorithm>

#include "kernels/cuda/gemm.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/linear.h"
#include "kernels/shared/bf16.h"

namespace trident::cuda {

namespace {

// dbias reduction: rows are cut into fixed blocks of kBiasRowBlock; a CUDA block sums one row block for kBiasCols
// consecutive columns (a warp reads 32 consecutive values of a row: coalesced), kBiasLanes rows at a time. The row
// block size is a constant, not derived from the device, so the summation order, and the result, is the same on
// every run and every GPU.
constexpr int kBiasCols = 32;
constexpr int kBiasLanes = 8;
constexpr int64_t kBiasRowBlock = 256;
constexpr int kMaxGridY = 65535;

template <class T>
__global__ void broadcast_bias_kernel(T* out, const T* bias, int64_t N, int OC) {
  TRIDENT_GRID_STRIDE_LOOP(i, N * OC) out[i] = bias[i % OC];
}

// partial[b, c] = sum of dout[r, c] over the rows r of row block b. Grid (row blocks, column tiles), block
// (kBiasCols, kBiasLanes): lane y sums rows begin + y, begin + y + kBiasLanes, ... in order, then lane 0 adds the
// lanes' sums in lane order.
template <class T>
__global__ void bias_partial_kernel(float* partial, const T* dout, int64_t N, int OC) {
  __shared__ float lane_sums[kBiasLanes][kBiasCols];
  const int64_t b = blockIdx.x;
  const int64_t begin = b * kBiasRowBlock;
  const int64_t end = begin + kBiasRowBlock < N ? begin + kBiasRowBlock : N;
  const int tiles = (OC + kBiasCols - 1) / kBiasCols;
  for (int tile = blockIdx.y; tile < tiles; tile += gridDim.y) {  // uniform in the block: barriers are safe
    const int c = tile * kBiasCols + threadIdx.x;
    float acc = 0.0f;
    if (c < OC) {
      for (int64_t r = begin + threadIdx.y; r < end; r += kBiasLanes) acc += to_float(dout[r * OC + c]);
    }
    lane_sums[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && c < OC) {
      float sum = 0.0f;
      for (int y = 0; y < kBiasLanes; ++y) sum += lane_sums[y][threadIdx.x];
      partial[b * OC + c] = sum;
    }
    __syncthreads();  // lane_sums is rewritten for the next tile
  }
}

// dbias[c] += sum over row blocks b, in block order, of partial[b, c].
__global__ void bias_finish_kernel(float* dbias, const float* partial, int64_t blocks, int OC) {
  TRIDENT_GRID_STRIDE_LOOP(c, OC) {
    float sum = 0.0f;
    for (int64_t b = 0; b < blocks; ++b) sum += partial[b * OC + c];
    dbias[c] += sum;
  }
}

template <class T>
void bias_backward(float* dbias, const T* dout, int64_t N, int OC, cudaStream_t stream) {
  if (N == 0 || OC == 0) return;
  const int64_t blocks = (N + kBiasRowBlock - 1) / kBiasRowBlock;
  float* partial = nullptr;
  TRIDENT_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&partial), sizeof(float) * blocks * OC, stream));
  const int tiles = (OC + kBiasCols - 1) / kBiasCols;
  const dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(std::min(tiles, kMaxGridY)));
  TRIDENT_LAUNCH(grid, dim3(kBiasCols, kBiasLanes), 0, stream, bias_partial_kernel<T>)(partial, dout, N, OC);
  TRIDENT_CUDA_CHECK_LAUNCH();
  TRIDENT_LAUNCH(elementwise_blocks(OC), kThreads, 0, stream, bias_finish_kernel)(dbias, partial, blocks, OC);
  TRIDENT_CUDA_CHECK_LAUNCH();
  TRIDENT_CUDA_CHECK(cudaFreeAsync(partial, stream));
}

}  // namespace

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
  if (dbias != nullptr) bias_backward(dbias, dout, N, OC, stream);
}

template void linear_forward<float>(float*, const float*, const float*, const float*, int64_t, int, int,
                                    cudaStream_t);
template void linear_forward<bf16>(bf16*, const bf16*, const bf16*, const bf16*, int64_t, int, int, cudaStream_t);
template void linear_backward<float>(float*, float*, float*, const float*, const float*, const float*, int64_t, int,
                                     int, cudaStream_t);
template void linear_backward<bf16>(bf16*, float*, float*, const bf16*, const bf16*, const bf16*, int64_t, int, int,
                                    cudaStream_t);

}  // namespace trident::cuda
