#pragma once
// The tile machinery of the softmax attention kernels (attention_softmax.cu over packed sequences, attention_block.cu
// over Ring Attention's key blocks): 8-warp blocks; a warp owns R rows of the block's tile (query rows, or keys in
// the dK/dV kernels) and, when forming scores, a lane owns one entry of the kKeys-wide other side; when accumulating
// outputs a lane owns the head columns d = lane + 32k (k < kDPerLane, hence D <= kMaxD). Tiles sit in shared memory
// as fp32 with an odd row stride, so lanes reading one column of 32 different rows hit 32 different banks; row reads
// with lanes over columns are conflict-free anyway.
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/cuda/check.h"
#include "kernels/cuda/warp.cuh"
#include "kernels/shared/bf16.h"
#include "kernels/shared/exp.h"
#include "kernels/shared/online_softmax.h"

namespace trident::cuda::attention {

inline constexpr int kWarps = 8;
inline constexpr int kBlockThreads = 32 * kWarps;
inline constexpr int kMaxD = 128;
inline constexpr int kDPerLane = kMaxD / 32;
inline constexpr int kKeys = 32;  // the lane-indexed side of a score tile
static_assert(kKeys == 32, "a lane owns one key (or one query in dK/dV) of a tile");
inline constexpr int kFwdRowsPerWarp = 8;
inline constexpr int kFwdRows = kFwdRowsPerWarp * kWarps;  // forward query tile
inline constexpr int kBwdRowsPerWarp = 4;
inline constexpr int kBwdRows = kBwdRowsPerWarp * kWarps;  // dQ query tile, and the dK/dV key tile

__host__ __device__ inline int padded_stride(int D) { return D | 1; }

// dst (tile_rows x lds, fp32) <- `rows` rows of D values `ld` apart from src; rows past `rows` are zeroed, so the
// products of a partial tile see zeros. Threads walk the tile in row-major order: coalesced reads of each row.
template <class T>
__device__ void load_rows(float* dst, int lds, const T* src, int64_t ld, int rows, int tile_rows, int D) {
  for (int idx = threadIdx.x; idx < tile_rows * D; idx += blockDim.x) {
    const int r = idx / D, d = idx - r * D;
    dst[r * lds + d] = r < rows ? to_float(src[r * ld + d]) : 0.0f;
  }
}

// dst[r] = src[r] for the tile's rows, 0 past `rows` (lse and delta of a tile's queries).
__device__ inline void load_row_values(float* dst, const float* src, int rows, int tile_rows) {
  for (int r = threadIdx.x; r < tile_rows; r += blockDim.x) dst[r] = r < rows ? src[r] : 0.0f;
}

// out[r] += <rows[warp*R + r], lane_rows[lane]> over D columns: the warp's R rows against the lane's row.
template <int R>
__device__ __forceinline__ void dot_warp_rows(float (&out)[R], const float* rows, const float* lane_rows, int lds,
                                              int D) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int d = 0; d < D; ++d) {
    const float b = lane_rows[lane * lds + d];
#pragma unroll
    for (int r = 0; r < R; ++r) out[r] += rows[(warp * R + r) * lds + d] * b;
  }
}

// acc[r][k] += sum_{j < count} w[warp*R + r][j] * x[j][lane + 32k]: the warp's rows of a (rows x kKeys) weight tile
// (probabilities, or score gradients) times a (kKeys x lds) tile; the lane's columns.
template <int R>
__device__ __forceinline__ void accumulate_warp_rows(float (&acc)[R][kDPerLane], const float* w, const float* x,
                                                     int count, int lds, int D) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int j = 0; j < count; ++j) {
    const float* x_row = x + j * lds;
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const float wj = w[(warp * R + r) * kKeys + j];
#pragma unroll
      for (int k = 0; k < kDPerLane; ++k) {
        const int d = lane + 32 * k;
        if (d < D) acc[r][k] += wj * x_row[d];
      }
    }
  }
}

// row[d] += scale * acc[k] for the lane's columns d = lane + 32k: one row of a gradient, accumulated.
template <class T>
__device__ __forceinline__ void add_lane_columns(T* row, const float (&acc)[kDPerLane], float scale, int D) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int k = 0; k < kDPerLane; ++k) {
    const int d = lane + 32 * k;
    if (d < D) row[d] = from_float<T>(to_float(row[d]) + scale * acc[k]);
  }
}

// The three tile steps of the kernels. valid(row, col) says whether a warp row (query, or key in dK/dV) and the
// lane's column (key, or query) of the score tile see each other; it must be false past either tile's end.

// Forward: folds one key tile (Ks, Vs: bc keys) into the online softmax of the warp's R query rows (Qs): scores,
// masks, m and l advanced, acc rescaled and P V added. Ps: the warp's rows of a (rows x kKeys) scratch tile.
template <int R, class Valid>
__device__ __forceinline__ void fold_key_tile(float (&m)[R], float (&l)[R], float (&acc)[R][kDPerLane],
                                              const float* Qs, const float* Ks, const float* Vs, float* Ps, int bc,
                                              int lds, int D, float scale, Valid valid) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float s[R] = {};
  dot_warp_rows(s, Qs, Ks, lds, D);
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int row = warp * R + r;
    const bool ok = valid(row, lane);
    const float x = ok ? s[r] * scale : -INFINITY;
    // A row with no visible key in this tile keeps its max (alpha = 1, also while it is still -inf) and gets p = 0
    // without evaluating exp(-inf - m).
    const float alpha = online_softmax_advance(m[r], l[r], warp_max(x));
    const float p = ok ? kernel_exp(x - m[r]) : 0.0f;
    l[r] += warp_sum(p);
    Ps[row * kKeys + lane] = p;
#pragma unroll
    for (int k = 0; k < kDPerLane; ++k) acc[r][k] *= alpha;
  }
  __syncwarp();
  accumulate_warp_rows(acc, Ps, Vs, bc, lds, D);
  __syncwarp();  // this warp's Ps rows are rewritten by the next tile
}

// dQ: one key tile's part of the gradient of the warp's R query rows. For key `lane` a lane forms
// P = exp(scale q.k - lse) and dP = dO.v; dS = P (dP - delta) goes through dSs to acc += dS K (scaled by the caller).
template <int R, class Valid>
__device__ __forceinline__ void dq_key_tile(float (&acc)[R][kDPerLane], const float* Qs, const float* dOs,
                                            const float* Ks, const float* Vs, float* dSs, const float* lse_s,
                                            const float* delta_s, int bc, int lds, int D, float scale, Valid valid) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float s[R] = {}, dp[R] = {};
  dot_warp_rows(s, Qs, Ks, lds, D);
  dot_warp_rows(dp, dOs, Vs, lds, D);
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int row = warp * R + r;
    const float p = valid(row, lane) ? kernel_exp(s[r] * scale - lse_s[row]) : 0.0f;
    dSs[row * kKeys + lane] = p * (dp[r] - delta_s[row]);
  }
  __syncwarp();
  accumulate_warp_rows(acc, dSs, Ks, bc, lds, D);
  __syncwarp();
}

// dK, dV: one query tile's part of the gradients of the warp's R keys. For query `lane` a lane forms P and dS against
// its warp's keys; they go through Pt and dSt (transposed: rows are keys) to dV += P^T dO and dK += dS^T Q (scaled by
// the caller).
template <int R, class Valid>
__device__ __forceinline__ void dkdv_query_tile(float (&dk)[R][kDPerLane], float (&dv)[R][kDPerLane], const float* Ks,
                                                const float* Vs, const float* Qs, const float* dOs, float* Pt,
                                                float* dSt, const float* lse_s, const float* delta_s, int br, int lds,
                                                int D, float scale, Valid valid) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float s[R] = {}, dp[R] = {};
  dot_warp_rows(s, Ks, Qs, lds, D);
  dot_warp_rows(dp, Vs, dOs, lds, D);
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int key = warp * R + r;
    const float p = valid(key, lane) ? kernel_exp(s[r] * scale - lse_s[lane]) : 0.0f;
    Pt[key * kKeys + lane] = p;
    dSt[key * kKeys + lane] = p * (dp[r] - delta_s[lane]);
  }
  __syncwarp();
  accumulate_warp_rows(dv, Pt, dOs, br, lds, D);
  accumulate_warp_rows(dk, dSt, Qs, br, lds, D);
  __syncwarp();
}

// Argument errors surface as a RuntimeError naming the failed condition, like a CUDA error.
#define TRIDENT_ATTN_REQUIRE(cond)                                                   \
  do {                                                                               \
    if (!(cond)) throw_cuda_error(cudaErrorInvalidValue, #cond, __FILE__, __LINE__); \
  } while (0)

inline void check_heads(int H, int D) {
  TRIDENT_ATTN_REQUIRE(H >= 1 && H <= 65535);  // grid.y
  TRIDENT_ATTN_REQUIRE(D >= 1 && D <= kMaxD);  // a lane accumulates columns lane + 32k, k < kDPerLane
}

// Above the default 48 KiB a kernel must opt in to its dynamic shared memory (D = 128 needs ~75 KiB, which every
// sm_80+ device allows).
template <class Kernel>
void allow_shared_memory(Kernel kernel, std::size_t bytes) {
  if (bytes > 48 * 1024)
    TRIDENT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
}

inline float softmax_scale(int D) { return 1.0f / std::sqrt(float(D)); }

}  // namespace trident::cuda::attention
