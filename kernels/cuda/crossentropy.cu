#include <math_constants.h>

#include <algorithm>
#include <climits>

#include "kernels/cuda/check.h"
#include "kernels/cuda/crossentropy.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/shared/bf16.h"
#include "kernels/shared/exp.h"
#include "kernels/shared/online_softmax.h"

namespace trident::cuda {

namespace {

constexpr int kRowThreads = 512;  // one block per row; a multiple of the warp size
constexpr int kRowWarps = kRowThreads / 32;
constexpr unsigned long long kNoBadToken = ~0ull;  // the flag's value while every target is valid

// Adds logit x to a thread's running (max m, sum l of exp(x_i - m)). A -inf logit adds nothing (and -inf - -inf
// would be NaN while m is still -inf); a NaN logit makes l NaN, as it makes the CPU's sum NaN.
__device__ __forceinline__ void online_add(float& m, float& l, float x) {
  if (x > m) {
    l = l * online_softmax_rescale(m, x) + 1.0f;
    m = x;
  } else if (x != -CUDART_INF_F) {
    l += kernel_exp(x - m);
  }
}

// Merges the statistics (m2, l2) of other elements into (m, l). Both at -inf (no finite logit seen) stays (-inf, 0).
__device__ __forceinline__ void online_merge(float& m, float& l, float m2, float l2) {
  const float m_new = m2 > m ? m2 : m;
  l = l * online_softmax_rescale(m, m_new) + l2 * online_softmax_rescale(m2, m_new);
  m = m_new;
}

__device__ __forceinline__ void warp_online_merge(float& m, float& l) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, offset);
    const float l2 = __shfl_xor_sync(0xffffffffu, l, offset);
    online_merge(m, l, m2, l2);
  }
}

// The block's (m, l) in every thread: a butterfly within each warp, then warp 0 merges the warps' results in warp
// order. A fixed tree, so the result is the same on every run. Called by all threads of the block.
__device__ void block_online_merge(float& m, float& l) {
  __shared__ float warp_m[kRowWarps], warp_l[kRowWarps];
  __shared__ float block_m, block_l;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  warp_online_merge(m, l);
  if (lane == 0) {
    warp_m[warp] = m;
    warp_l[warp] = l;
  }
  __syncthreads();
  if (warp == 0) {
    m = lane < kRowWarps ? warp_m[lane] : -CUDART_INF_F;
    l = lane < kRowWarps ? warp_l[lane] : 0.0f;
    warp_online_merge(m, l);
    if (lane == 0) {
      block_m = m;
      block_l = l;
    }
  }
  __syncthreads();
  m = block_m;
  l = block_l;
  __syncthreads();  // everyone has read block_m/l before the next row may overwrite the shared arrays
}

// Rows t = blockIdx.x, blockIdx.x + gridDim.x, ...; every branch depends only on t, so the whole block takes it
// together and the barriers in block_online_merge are reached by all threads. dlogits is nullptr in the forward
// and aliases logits in the fused backward.
template <class T, bool kBackward>
__global__ void __launch_bounds__(kRowThreads)
    crossentropy_kernel(float* losses, const T* logits, T* dlogits, const int32_t* targets, const float* weight,
                        int64_t N, int V, unsigned long long* bad_token) {
  for (int64_t t = blockIdx.x; t < N; t += gridDim.x) {
    const T* x = logits + t * V;
    T* dx = kBackward ? dlogits + t * V : nullptr;
    const int32_t target = targets[t];
    if (target < 0 || target >= V) {
      const bool valid = target == -1;  // no target: loss 0 and zero gradient; otherwise NaN and the flag
      if constexpr (kBackward) {
        const T fill = from_float<T>(valid ? 0.0f : CUDART_NAN_F);
        for (int i = threadIdx.x; i < V; i += blockDim.x) dx[i] = fill;
      }
      if (threadIdx.x == 0) {
        losses[t] = valid ? 0.0f : CUDART_NAN_F;
        if (!valid && bad_token != nullptr) atomicMin(bad_token, static_cast<unsigned long long>(t));
      }
      continue;
    }
    // Read before the barriers in block_online_merge: after them, other threads overwrite the row.
    const float x_target = to_float(x[target]);
    float m = -CUDART_INF_F, l = 0.0f;
    for (int i = threadIdx.x; i < V; i += blockDim.x) online_add(m, l, to_float(x[i]));
    block_online_merge(m, l);
    const float lse = online_softmax_lse(m, l);
    if (threadIdx.x == 0) losses[t] = lse - x_target;
    if constexpr (kBackward) {
      const float w = weight[t];
      for (int i = threadIdx.x; i < V; i += blockDim.x) {
        float g = w * kernel_exp(to_float(x[i]) - lse);
        if (i == target) g -= w;  // as the CPU kernel: w * p first, then minus w
        dx[i] = from_float<T>(g);
      }
    }
  }
}

template <class T, bool kBackward>
void launch(float* losses, const T* logits, T* dlogits, const int32_t* targets, const float* weight, int64_t N,
            int V, cudaStream_t stream, TargetCheck check) {
  if (N == 0) return;
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(N, INT_MAX));
  if (check == TargetCheck::caller) {  // no flag: nothing to wait for
    TRIDENT_LAUNCH(grid, kRowThreads, 0, stream, crossentropy_kernel<T, kBackward>)(
        losses, logits, dlogits, targets, weight, N, V, static_cast<unsigned long long*>(nullptr));
    TRIDENT_CUDA_CHECK(cudaGetLastError());
    return;
  }
  unsigned long long* bad_token = nullptr;
  TRIDENT_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&bad_token), sizeof *bad_token, stream));
  TRIDENT_CUDA_CHECK(cudaMemsetAsync(bad_token, 0xff, sizeof *bad_token, stream));  // kNoBadToken
  TRIDENT_LAUNCH(grid, kRowThreads, 0, stream, crossentropy_kernel<T, kBackward>)(
      losses, logits, dlogits, targets, weight, N, V, bad_token);
  if (const cudaError_t rc = cudaGetLastError(); rc != cudaSuccess) {
    cudaFreeAsync(bad_token, stream);
    TRIDENT_CUDA_CHECK(rc);
  }
  unsigned long long first_bad = kNoBadToken;
  TRIDENT_CUDA_CHECK(cudaMemcpyAsync(&first_bad, bad_token, sizeof first_bad, cudaMemcpyDeviceToHost, stream));
  TRIDENT_CUDA_CHECK(cudaFreeAsync(bad_token, stream));
  TRIDENT_CUDA_CHECK(cudaStreamSynchronize(stream));  // the flag is needed now; see the header
  if (first_bad != kNoBadToken) {
    const auto token = static_cast<int64_t>(first_bad);
    int32_t target = 0;
    TRIDENT_CUDA_CHECK(cudaMemcpyAsync(&target, targets + token, sizeof target, cudaMemcpyDeviceToHost, stream));
    TRIDENT_CUDA_CHECK(cudaStreamSynchronize(stream));
    detail::throw_crossentropy_target_error(target, token, V);
  }
}

}  // namespace

// ---- launchers ----------------------------------------------------------------------------------------------------

template <class T>
void crossentropy_forward(float* losses, const T* logits, const int32_t* targets, int64_t N, int V,
                          cudaStream_t stream, TargetCheck check) {
  launch<T, false>(losses, logits, nullptr, targets, nullptr, N, V, stream, check);
}

template <class T>
void crossentropy_fused_backward(float* losses, T* logits_to_dlogits, const int32_t* targets, const float* weight,
                                 int64_t N, int V, cudaStream_t stream, TargetCheck check) {
  launch<T, true>(losses, logits_to_dlogits, logits_to_dlogits, targets, weight, N, V, stream, check);
}

template void crossentropy_forward<float>(float*, const float*, const int32_t*, int64_t, int, cudaStream_t,
                                          TargetCheck);
template void crossentropy_forward<bf16>(float*, const bf16*, const int32_t*, int64_t, int, cudaStream_t,
                                         TargetCheck);
template void crossentropy_fused_backward<float>(float*, float*, const int32_t*, const float*, int64_t, int,
                                                 cudaStream_t, TargetCheck);
template void crossentropy_fused_backward<bf16>(float*, bf16*, const int32_t*, const float*, int64_t, int,
                                                cudaStream_t, TargetCheck);

}  // namespace trident::cuda
