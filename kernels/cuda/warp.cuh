#pragma once
// Warp-level helpers shared by the row kernels (norms, attention, grad norm).
#include <cstdint>

#include "kernels/cuda/launch.cuh"

namespace trident::cuda {

inline constexpr int kWarp = 32;
inline constexpr int kWarpsPerBlock = kThreads / kWarp;  // row kernels launched with kThreads: one warp per row

// Butterfly reductions: every lane ends with the same bits (a + b == b + a and max(a, b) == max(b, a) in IEEE
// arithmetic), so a row's statistic never depends on which lane reads it.
template <class T>
__device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Blocks for a row kernel launched with kThreads over `rows` rows (TRIDENT_WARP_PER_ROW_LOOP strides over the rest).
inline int row_kernel_blocks(int64_t rows) {
  const int64_t blocks = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  return static_cast<int>(blocks < 65535 ? (blocks > 0 ? blocks : 1) : 65535);
}

}  // namespace trident::cuda

// Rows are assigned to warps with a grid stride; the loop condition is uniform across a warp, so every lane takes
// part in the shuffles.
#define TRIDENT_WARP_PER_ROW_LOOP(r, rows)                                                                      \
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * ::trident::cuda::kWarpsPerBlock +                        \
                   threadIdx.x / ::trident::cuda::kWarp;                                                        \
       r < (rows); r += static_cast<int64_t>(gridDim.x) * ::trident::cuda::kWarpsPerBlock)
