#pragma once
// dbias[c] += sum over the rows r < N of value(r, c): the parameter gradient of a bias, from linear's dout or from
// the GELU backward computing each dpre as it sums it. Rows are cut into fixed blocks of kRowBlock; a CUDA block sums
// one row block for kCols consecutive columns (a warp reads 32 consecutive values of a row: coalesced), kLanes rows
// at a time, into a partial per row block; the partials are then added in block order. The row block is a constant,
// not derived from the device, so the summation order, and the result, is the same on every run and every GPU.
// value(r, c) is called exactly once per element, so it may also write that element.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/cuda/check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/shared/bf16.h"

namespace trident::cuda {

namespace column_sums_detail {

constexpr int kCols = 32;
constexpr int kLanes = 8;
constexpr int64_t kRowBlock = 256;
constexpr int kMaxGridY = 65535;

// partial[b, c] = sum of value(r, c) over the rows r of row block b. Grid (row blocks, column tiles), block
// (kCols, kLanes): lane y sums rows begin + y, begin + y + kLanes, ... in order, then lane 0 adds the lanes' sums in
// lane order.
template <class Value>
__global__ void partial_kernel(float* partial, Value value, int64_t N, int OC) {
  __shared__ float lane_sums[kLanes][kCols];
  const int64_t b = blockIdx.x;
  const int64_t begin = b * kRowBlock;
  const int64_t end = begin + kRowBlock < N ? begin + kRowBlock : N;
  const int tiles = (OC + kCols - 1) / kCols;
  for (int tile = blockIdx.y; tile < tiles; tile += gridDim.y) {  // uniform in the block: barriers are safe
    const int c = tile * kCols + threadIdx.x;
    float acc = 0.0f;
    if (c < OC) {
      for (int64_t r = begin + threadIdx.y; r < end; r += kLanes) acc += value(r, c);
    }
    lane_sums[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && c < OC) {
      float sum = 0.0f;
      for (int y = 0; y < kLanes; ++y) sum += lane_sums[y][threadIdx.x];
      partial[b * OC + c] = sum;
    }
    __syncthreads();  // lane_sums is rewritten for the next tile
  }
}

// dbias[c] += sum over row blocks b, in block order, of partial[b, c]. A template only so that every unit including
// this header may define it (a plain kernel here would be defined once per unit).
template <class Unused = void>
__global__ void finish_kernel(float* dbias, const float* partial, int64_t blocks, int OC) {
  TRIDENT_GRID_STRIDE_LOOP(c, OC) {
    float sum = 0.0f;
    for (int64_t b = 0; b < blocks; ++b) sum += partial[b * OC + c];
    dbias[c] += sum;
  }
}

}  // namespace column_sums_detail

// value(r, c) = x[r * OC + c] widened to fp32: the plain column sums of a row-major (N, OC) matrix.
template <class T>
struct RowMajor {
  const T* x;
  int OC;
  __device__ float operator()(int64_t r, int c) const { return to_float(x[r * OC + c]); }
};

// The partials add_column_sums takes from the device's pool for N rows of OC columns (freed in stream order).
inline std::size_t column_sums_scratch_bytes(int64_t N, int OC) {
  const int64_t blocks = (N + column_sums_detail::kRowBlock - 1) / column_sums_detail::kRowBlock;
  return sizeof(float) * static_cast<std::size_t>(blocks * OC);
}

template <class Value>
void add_column_sums(float* dbias, Value value, int64_t N, int OC, cudaStream_t stream) {
  namespace d = column_sums_detail;
  if (N == 0 || OC == 0) return;
  const int64_t blocks = (N + d::kRowBlock - 1) / d::kRowBlock;
  float* partial = nullptr;
  TRIDENT_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&partial), column_sums_scratch_bytes(N, OC), stream));
  const int tiles = (OC + d::kCols - 1) / d::kCols;
  const dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(std::min(tiles, d::kMaxGridY)));
  TRIDENT_LAUNCH(grid, dim3(d::kCols, d::kLanes), 0, stream, d::partial_kernel<Value>)(partial, value, N, OC);
  TRIDENT_CUDA_CHECK_LAUNCH();
  TRIDENT_LAUNCH(elementwise_blocks(OC), kThreads, 0, stream, d::finish_kernel<>)(dbias, partial, blocks, OC);
  TRIDENT_CUDA_CHECK_LAUNCH();
  TRIDENT_CUDA_CHECK(cudaFreeAsync(partial, stream));
}

}  // namespace trident::cuda
