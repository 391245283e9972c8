#pragma once
// Launch helpers shared by the element-wise kernels: a grid-stride loop over n elements, so one launch
// configuration covers any n (including n beyond 2^31) without a grid too large for the device.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/check.h"

namespace trident::cuda {

inline constexpr int kThreads = 256;

// Enough blocks to fill the device several times over; the loop strides over the rest.
inline int elementwise_blocks(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < 65535 ? (blocks > 0 ? blocks : 1) : 65535);
}

// Kernel launches and dynamic shared memory, spelled so a kernel file also compiles as host C++ for the SIMT
// emulation test (tests/kernels/simt/: blocks of CPU threads), which defines both before including any kernel:
//   TRIDENT_LAUNCH(grid, block, shared_bytes, stream, kernel)(args...)   (kernel last: it may hold commas, f<T, U>)
//   TRIDENT_DYNAMIC_SHARED(float, smem);
#if defined(__CUDACC__)
#define TRIDENT_LAUNCH(grid, block, shared_bytes, stream, ...) __VA_ARGS__<<<grid, block, shared_bytes, stream>>>
#define TRIDENT_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#endif

#define TRIDENT_GRID_STRIDE_LOOP(i, n)                                                                 \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n);               \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)

}  // namespace trident::cuda
