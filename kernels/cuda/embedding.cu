#include "kernels/cuda/embedding.h"

#include <algorithm>
#include <climits>
#include <cub/device/device_radix_sort.cuh>

#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/warp.cuh"
#include "kernels/shared/bf16.h"

namespace trident::cuda {

namespace {

constexpr int kScatterCols = 64;        // channels per warp in the backward: two coalesced strips of 32
constexpr int kScatterMaxBlocks = 2048;  // the warps stride over the sorted entries beyond this

template <class T>
__global__ void embedding_forward_kernel(T* out, const int32_t* tokens, const int32_t* positions, const float* wte,
                                         const float* wpe, int64_t N, int C) {
  TRIDENT_GRID_STRIDE_LOOP(i, N * C) {
    const int64_t t = i / C;
    const int c = static_cast<int>(i - t * C);
    float v = wte[static_cast<int64_t>(tokens[t]) * C + c];
    if (wpe != nullptr) v += wpe[static_cast<int64_t>(positions[t]) * C + c];
    out[i] = from_float<T>(v);
  }
}

__global__ void iota_kernel(int32_t* x, int64_t n) { TRIDENT_GRID_STRIDE_LOOP(i, n) x[i] = static_cast<int32_t>(i); }

// keys (N): table rows (token or position ids) in stably sorted order; order (N): the token each entry came from,
// ascending within a run of equal keys. The warp at a run's first entry owns the run: for its channel strip it
// adds the run's dout rows onto the table row in token order. Runs have distinct keys and strips distinct channels,
// so every gradient element has exactly one writer.
template <class T>
__global__ void embedding_scatter_kernel(float* dtable, const T* dout, const int32_t* keys, const int32_t* order,
                                         int64_t N, int C) {
  const int lane = threadIdx.x % kWarp;
  const int strip_stride = static_cast<int>(gridDim.y) * kScatterCols;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarp; j < N;
       j += static_cast<int64_t>(gridDim.x) * kWarpsPerBlock) {
    const int32_t key = keys[j];
    if (j > 0 && keys[j - 1] == key) continue;  // inside a run: its first entry's warp does the work
    int64_t end = j + 1;  // the run is [j, end)
    while (end < N && keys[end] == key) ++end;
    float* row = dtable + static_cast<int64_t>(key) * C;
    for (int c0 = static_cast<int>(blockIdx.y) * kScatterCols; c0 < C; c0 += strip_stride) {
      const int c_end = C < c0 + kScatterCols ? C : c0 + kScatterCols;
      for (int c = c0 + lane; c < c_end; c += kWarp) {
        float acc = row[c];  // onto the existing value first, then token by token, as the CPU kernel adds
#pragma unroll 4
        for (int64_t k = j; k < end; ++k) acc += to_float(dout[static_cast<int64_t>(order[k]) * C + c]);
        row[c] = acc;
      }
    }
  }
}

// Byte offsets inside the one scratch allocation, each aligned for any element type.
std::size_t align_up(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

// CUB's temporary storage for sorting n (id, position) pairs; the query launches nothing.
std::size_t sort_storage_bytes(int n) {
  std::size_t bytes = 0;
  TRIDENT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, static_cast<const int32_t*>(nullptr),
                                                     static_cast<int32_t*>(nullptr),
                                                     static_cast<const int32_t*>(nullptr),
                                                     static_cast<int32_t*>(nullptr), n, 0, 32));
  return bytes;
}

}  // namespace

std::size_t embedding_backward_scratch_bytes(int64_t N) {
  if (N == 0) return 0;
  if (N > INT_MAX) throw_cuda_error(cudaErrorInvalidValue, "embedding_backward: N >= 2^31 tokens", __FILE__, __LINE__);
  return 3 * align_up(static_cast<std::size_t>(N) * sizeof(int32_t)) +
         align_up(sort_storage_bytes(static_cast<int>(N)));
}

// ---- launchers ----------------------------------------------------------------------------------------------------

template <class T>
void embedding_forward(T* out, const int32_t* tokens, const int32_t* positions, const float* wte, const float* wpe,
                       int64_t N, int C, cudaStream_t stream) {
  if (N == 0 || C == 0) return;
  TRIDENT_LAUNCH(elementwise_blocks(N * C), kThreads, 0, stream, embedding_forward_kernel<T>)(
      out, tokens, positions, wte, wpe, N, C);
  TRIDENT_CUDA_CHECK_LAUNCH();
}

template <class T>
void embedding_backward(float* dwte, float* dwpe, const T* dout, const int32_t* tokens, const int32_t* positions,
                        int64_t N, int C, cudaStream_t stream) {
  if (N == 0 || C == 0) return;
  const std::size_t scratch_bytes = embedding_backward_scratch_bytes(N);  // throws for N >= 2^31
  const int n = static_cast<int>(N);
  const std::size_t sort_bytes = sort_storage_bytes(n);
  const std::size_t ids_bytes = align_up(static_cast<std::size_t>(N) * sizeof(int32_t));
  char* scratch = nullptr;
  TRIDENT_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&scratch), scratch_bytes, stream));
  auto* keys = reinterpret_cast<int32_t*>(scratch);
  auto* iota = reinterpret_cast<int32_t*>(scratch + ids_bytes);
  auto* order = reinterpret_cast<int32_t*>(scratch + 2 * ids_bytes);
  void* sort_tmp = scratch + 3 * ids_bytes;

  TRIDENT_LAUNCH(elementwise_blocks(N), kThreads, 0, stream, iota_kernel)(iota, N);
  TRIDENT_CUDA_CHECK_LAUNCH();
  const int64_t entry_blocks = (N + kWarpsPerBlock - 1) / kWarpsPerBlock;
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>(entry_blocks, kScatterMaxBlocks)),
                  static_cast<unsigned>(std::min((C + kScatterCols - 1) / kScatterCols, 65535)));
  auto scatter = [&](float* dtable, const int32_t* ids) {
    std::size_t bytes = sort_bytes;
    TRIDENT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(sort_tmp, bytes, ids, keys, static_cast<const int32_t*>(iota),
                                                       order, n, 0, 32, stream));
    TRIDENT_LAUNCH(grid, kThreads, 0, stream, embedding_scatter_kernel<T>)(dtable, dout, keys, order, N, C);
    TRIDENT_CUDA_CHECK_LAUNCH();
  };
  scatter(dwte, tokens);
  if (dwpe != nullptr) scatter(dwpe, positions);  // stream order: runs after the first scatter is done with keys
  TRIDENT_CUDA_CHECK(cudaFreeAsync(scratch, stream));
}

template void embedding_forward<float>(float*, const int32_t*, const int32_t*, const float*, const float*, int64_t,
                                       int, cudaStream_t);
template void embedding_forward<bf16>(bf16*, const int32_t*, const int32_t*, const float*, const float*, int64_t, int,
                                      cudaStream_t);
template void embedding_backward<float>(float*, float*, const float*, const int32_t*, const int32_t*, int64_t, int,
                                        cudaStream_t);
template void embedding_backward<bf16>(float*, float*, const bf16*, const int32_t*, const int32_t*, int64_t, int,
                                       cudaStream_t);

}  // namespace trident::cuda
