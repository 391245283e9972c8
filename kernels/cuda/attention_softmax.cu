#include "kernels/cuda/attention_softmax.h"

#include <cmath>
#include <cstddef>

#include "kernels/cuda/attention_tiles.cuh"
#include "kernels/cuda/check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/warp.cuh"
#include "kernels/shared/bf16.h"
#include "kernels/shared/exp.h"
#include "kernels/shared/online_softmax.h"

// Three kernels, each block one tile of one head of one sequence, 8 warps:
//   forward   a 64-row query tile; loops over 32-key tiles up to the diagonal with the online softmax.
//   dQ        a 32-row query tile; loops over 32-key tiles up to the diagonal, recomputing P from lse.
//   dK, dV    a 32-key tile; loops over the 32-row query tiles on and below the diagonal, recomputing P.
// Splitting dQ from dK/dV (FlashAttention-2's backward without its dQ atomics) makes every gradient element the
// sum of one thread, in a fixed order: results are bit-identical run to run. The price is computing the score
// and dP tiles twice.
//
// The tile layout and the shared pieces are in kernels/cuda/attention_tiles.cuh.

namespace trident::cuda {

namespace {

using namespace attention;

// Blocks are numbered tile by tile, sequence by sequence, without a host copy of cu_seqlens: sequence s's tiles
// (of `tile` rows) are numbered from base(s) = cu_seqlens[s] / tile + s. base is strictly increasing and leaves
// room for ceil(len_s / tile) tiles before base(s+1), so floor(N / tile) + n_seq blocks cover every tile, and a
// block finds its sequence by a binary search over base. Blocks past a sequence's last tile have no work
// (at most one per sequence).
int tile_blocks(int64_t N, int n_seq, int tile) { return int(N / tile) + n_seq; }

struct Tile {
  int64_t t0;  // first token of the sequence in the packed batch
  int len;     // sequence length
  int row0;    // first row of the tile, local to the sequence
  int rows;    // rows in the tile: min(tile, len - row0)
};

__device__ bool find_tile(const int32_t* cu_seqlens, int n_seq, int tile, int block, Tile& out) {
  int lo = 0, hi = n_seq - 1;  // the last s with base(s) <= block; base(0) = 0
  while (lo < hi) {
    const int mid = lo + (hi - lo + 1) / 2;
    if (cu_seqlens[mid] / tile + mid <= block)
      lo = mid;
    else
      hi = mid - 1;
  }
  const int first = cu_seqlens[lo], len = cu_seqlens[lo + 1] - first;
  const int row0 = (block - (first / tile + lo)) * tile;
  if (row0 >= len) return false;
  out = {first, len, row0, min(tile, len - row0)};
  return true;
}

// delta[r] = rowsum(dO_r * O_r) for the tile's rows (0 past `rows`): the softmax Jacobian's correction term.
// Warps take rows, lanes columns.
template <class T>
__device__ void row_deltas(float* delta, const T* dout, const T* out, int64_t ld, int rows, int tile_rows, int D) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int r = warp; r < tile_rows; r += kWarps) {
    float sum = 0.0f;
    if (r < rows)
      for (int d = lane; d < D; d += 32) sum += to_float(dout[r * ld + d]) * to_float(out[r * ld + d]);
    sum = warp_sum(sum);
    if (lane == 0) delta[r] = sum;
  }
}

// One block per (64-row query tile, head). Warp w owns query rows 8w..8w+7; per key tile a lane scores key `lane`
// against its warp's rows, the warp reduces max and sum by shuffles (every lane keeps the same m and l), and the
// probabilities go through shared memory to the P V product, where a lane owns columns lane + 32k.
template <class T>
__global__ void __launch_bounds__(kBlockThreads)
    attention_softmax_forward_kernel(T* out, float* lse, const T* qkv, const int32_t* cu_seqlens, int n_seq,
                                     int64_t N, int H, int D, float scale) {
  Tile tile;
  // Late tiles of a sequence see the most keys: launch them first.
  if (!find_tile(cu_seqlens, n_seq, kFwdRows, gridDim.x - 1 - blockIdx.x, tile)) return;
  const int h = blockIdx.y, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t C = int64_t(H) * D, ld = 3 * C;
  const int lds = padded_stride(D), q0 = tile.row0, br = tile.rows;

  TRIDENT_DYNAMIC_SHARED(float, smem);
  float* Qs = smem;                  // kFwdRows x lds
  float* Ks = Qs + kFwdRows * lds;   // kKeys x lds
  float* Vs = Ks + kKeys * lds;      // kKeys x lds
  float* Ps = Vs + kKeys * lds;      // kFwdRows x kKeys, rows of warp w written and read by warp w only

  load_rows(Qs, lds, qkv + (tile.t0 + q0) * ld + h * D, ld, br, kFwdRows, D);

  float acc[kFwdRowsPerWarp][kDPerLane] = {};
  float m[kFwdRowsPerWarp], l[kFwdRowsPerWarp];
#pragma unroll
  for (int r = 0; r < kFwdRowsPerWarp; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.0f;
  }

  // Causal: key tiles that start at or before the last query row, cut at that row.
  for (int k0 = 0; k0 < q0 + br; k0 += kKeys) {
    const int bc = min(kKeys, q0 + br - k0);
    const T* k_rows = qkv + (tile.t0 + k0) * ld + C + h * D;
    __syncthreads();  // the previous K and V tiles are no longer read
    load_rows(Ks, lds, k_rows, ld, bc, kKeys, D);
    load_rows(Vs, lds, k_rows + C, ld, bc, kKeys, D);
    __syncthreads();

    // Key 0 is in the first tile, so a real row's max is finite from then on.
    fold_key_tile(m, l, acc, Qs, Ks, Vs, Ps, bc, lds, D, scale,
                  [&](int row, int key) { return row < br && key < bc && k0 + key <= q0 + row; });
  }

#pragma unroll
  for (int r = 0; r < kFwdRowsPerWarp; ++r) {
    const int row = warp * kFwdRowsPerWarp + r;
    if (row >= br) continue;
    const int64_t t = tile.t0 + q0 + row;
    const float inv_l = 1.0f / l[r];
#pragma unroll
    for (int k = 0; k < kDPerLane; ++k) {
      const int d = lane + 32 * k;
      if (d < D) out[t * C + h * D + d] = from_float<T>(acc[r][k] * inv_l);
    }
    if (lane == 0) lse[h * N + t] = online_softmax_lse(m[r], l[r]);
  }
}

// dQ: one block per (32-row query tile, head). Warp w owns query rows 4w..4w+3. Per key tile a lane forms, for
// key `lane`, P = exp(scale q.k - lse) and dP = dO.v, then dS = P (dP - delta) goes through shared memory to
// dQ += scale dS K, where a lane owns columns lane + 32k.
template <class T>
__global__ void __launch_bounds__(kBlockThreads)
    attention_softmax_backward_dq_kernel(T* dqkv, const T* dout, const T* qkv, const T* out, const float* lse,
                                         const int32_t* cu_seqlens, int n_seq, int64_t N, int H, int D,
                                         float scale) {
  Tile tile;
  if (!find_tile(cu_seqlens, n_seq, kBwdRows, gridDim.x - 1 - blockIdx.x, tile)) return;
  const int h = blockIdx.y, warp = threadIdx.x / 32;
  const int64_t C = int64_t(H) * D, ld = 3 * C;
  const int lds = padded_stride(D), q0 = tile.row0, br = tile.rows;
  const int64_t tq = tile.t0 + q0;  // first token of the tile

  TRIDENT_DYNAMIC_SHARED(float, smem);
  float* Qs = smem;                    // kBwdRows x lds
  float* dOs = Qs + kBwdRows * lds;    // kBwdRows x lds
  float* Ks = dOs + kBwdRows * lds;    // kKeys x lds
  float* Vs = Ks + kKeys * lds;        // kKeys x lds
  float* dSs = Vs + kKeys * lds;       // kBwdRows x kKeys, per warp
  float* lse_s = dSs + kBwdRows * kKeys;
  float* delta_s = lse_s + kBwdRows;

  load_rows(Qs, lds, qkv + tq * ld + h * D, ld, br, kBwdRows, D);
  load_rows(dOs, lds, dout + tq * C + h * D, C, br, kBwdRows, D);
  load_row_values(lse_s, lse + h * N + tq, br, kBwdRows);
  row_deltas(delta_s, dout + tq * C + h * D, out + tq * C + h * D, C, br, kBwdRows, D);

  float acc[kBwdRowsPerWarp][kDPerLane] = {};
  for (int k0 = 0; k0 < q0 + br; k0 += kKeys) {
    const int bc = min(kKeys, q0 + br - k0);
    const T* k_rows = qkv + (tile.t0 + k0) * ld + C + h * D;
    __syncthreads();  // the previous K and V tiles are no longer read
    load_rows(Ks, lds, k_rows, ld, bc, kKeys, D);
    load_rows(Vs, lds, k_rows + C, ld, bc, kKeys, D);
    __syncthreads();

    dq_key_tile(acc, Qs, dOs, Ks, Vs, dSs, lse_s, delta_s, bc, lds, D, scale,
                [&](int row, int key) { return row < br && key < bc && k0 + key <= q0 + row; });
  }

#pragma unroll
  for (int r = 0; r < kBwdRowsPerWarp; ++r) {
    const int row = warp * kBwdRowsPerWarp + r;
    if (row < br) add_lane_columns(dqkv + (tq + row) * ld + h * D, acc[r], scale, D);
  }
}

// dK, dV: one block per (32-key tile, head). Warp w owns keys 4w..4w+3. Per query tile (from the tile's first key
// to the end of the sequence) a lane forms P and dS for query `lane` against its warp's keys; they go through
// shared memory to dV += P^T dO and dK += scale dS^T Q, where a lane owns columns lane + 32k.
template <class T>
__global__ void __launch_bounds__(kBlockThreads)
    attention_softmax_backward_dkdv_kernel(T* dqkv, const T* dout, const T* qkv, const T* out, const float* lse,
                                           const int32_t* cu_seqlens, int n_seq, int64_t N, int H, int D,
                                           float scale) {
  Tile tile;
  // Early key tiles see the most queries and come first in the numbering: launch in order.
  if (!find_tile(cu_seqlens, n_seq, kBwdRows, blockIdx.x, tile)) return;
  const int h = blockIdx.y, warp = threadIdx.x / 32;
  const int64_t C = int64_t(H) * D, ld = 3 * C;
  const int lds = padded_stride(D), k0 = tile.row0, bc = tile.rows;
  const int64_t tk = tile.t0 + k0;  // first token of the key tile

  TRIDENT_DYNAMIC_SHARED(float, smem);
  float* Ks = smem;                    // kBwdRows x lds
  float* Vs = Ks + kBwdRows * lds;     // kBwdRows x lds
  float* Qs = Vs + kBwdRows * lds;     // kKeys x lds (the query tile)
  float* dOs = Qs + kKeys * lds;       // kKeys x lds
  float* Pt = dOs + kKeys * lds;       // kBwdRows x kKeys: P^T, rows of warp w written and read by warp w only
  float* dSt = Pt + kBwdRows * kKeys;  // kBwdRows x kKeys: dS^T, likewise
  float* lse_s = dSt + kBwdRows * kKeys;
  float* delta_s = lse_s + kKeys;

  load_rows(Ks, lds, qkv + tk * ld + C + h * D, ld, bc, kBwdRows, D);
  load_rows(Vs, lds, qkv + tk * ld + 2 * C + h * D, ld, bc, kBwdRows, D);

  float dk[kBwdRowsPerWarp][kDPerLane] = {}, dv[kBwdRowsPerWarp][kDPerLane] = {};
  // Causal: only queries at or after the tile's first key.
  for (int q0 = k0; q0 < tile.len; q0 += kKeys) {
    const int br = min(kKeys, tile.len - q0);
    const int64_t tq = tile.t0 + q0;
    __syncthreads();  // the previous query tile is no longer read
    load_rows(Qs, lds, qkv + tq * ld + h * D, ld, br, kKeys, D);
    load_rows(dOs, lds, dout + tq * C + h * D, C, br, kKeys, D);
    load_row_values(lse_s, lse + h * N + tq, br, kKeys);
    row_deltas(delta_s, dout + tq * C + h * D, out + tq * C + h * D, C, br, kKeys, D);
    __syncthreads();

    dkdv_query_tile(dk, dv, Ks, Vs, Qs, dOs, Pt, dSt, lse_s, delta_s, br, lds, D, scale,
                    [&](int key, int query) { return key < bc && query < br && k0 + key <= q0 + query; });
  }

#pragma unroll
  for (int r = 0; r < kBwdRowsPerWarp; ++r) {
    const int key = warp * kBwdRowsPerWarp + r;
    if (key >= bc) continue;
    T* dk_row = dqkv + (tk + key) * ld + C + h * D;
    add_lane_columns(dk_row, dk[r], scale, D);
    add_lane_columns(dk_row + C, dv[r], 1.0f, D);
  }
}

void check_args(int n_seq, int64_t N, int H, int D) {
  TRIDENT_ATTN_REQUIRE(n_seq >= 0 && N >= 0 && N <= INT32_MAX);
  check_heads(H, D);
}

}  // namespace

// ---- launchers ----------------------------------------------------------------------------------------------------

template <class T>
void attention_softmax_forward(T* out, float* lse, const T* qkv, const int32_t* cu_seqlens, int n_seq, int64_t N,
                               int H, int D, cudaStream_t stream) {
  check_args(n_seq, N, H, D);
  if (n_seq == 0 || N == 0) return;
  const int lds = padded_stride(D);
  const std::size_t smem = sizeof(float) * (std::size_t(kFwdRows + 2 * kKeys) * lds + kFwdRows * kKeys);
  allow_shared_memory(attention_softmax_forward_kernel<T>, smem);
  const dim3 grid(tile_blocks(N, n_seq, kFwdRows), H);
  TRIDENT_LAUNCH(grid, kBlockThreads, smem, stream, attention_softmax_forward_kernel<T>)(
      out, lse, qkv, cu_seqlens, n_seq, N, H, D, softmax_scale(D));
  TRIDENT_CUDA_CHECK_LAUNCH();
}

template <class T>
void attention_softmax_backward(T* dqkv, const T* dout, const T* qkv, const T* out, const float* lse,
                                const int32_t* cu_seqlens, int n_seq, int64_t N, int H, int D, cudaStream_t stream) {
  check_args(n_seq, N, H, D);
  if (n_seq == 0 || N == 0) return;
  const int lds = padded_stride(D);
  const float scale = softmax_scale(D);

  // dQ and dK/dV write disjoint columns of dqkv, so their order does not matter.
  const std::size_t dq_smem =
      sizeof(float) * (std::size_t(2 * kBwdRows + 2 * kKeys) * lds + kBwdRows * kKeys + 2 * kBwdRows);
  allow_shared_memory(attention_softmax_backward_dq_kernel<T>, dq_smem);
  const dim3 dq_grid(tile_blocks(N, n_seq, kBwdRows), H);
  TRIDENT_LAUNCH(dq_grid, kBlockThreads, dq_smem, stream, attention_softmax_backward_dq_kernel<T>)(
      dqkv, dout, qkv, out, lse, cu_seqlens, n_seq, N, H, D, scale);
  TRIDENT_CUDA_CHECK_LAUNCH();

  const std::size_t dkdv_smem =
      sizeof(float) * (std::size_t(2 * kBwdRows + 2 * kKeys) * lds + 2 * kBwdRows * kKeys + 2 * kKeys);
  allow_shared_memory(attention_softmax_backward_dkdv_kernel<T>, dkdv_smem);
  const dim3 dkdv_grid(tile_blocks(N, n_seq, kBwdRows), H);
  TRIDENT_LAUNCH(dkdv_grid, kBlockThreads, dkdv_smem, stream, attention_softmax_backward_dkdv_kernel<T>)(
      dqkv, dout, qkv, out, lse, cu_seqlens, n_seq, N, H, D, scale);
  TRIDENT_CUDA_CHECK_LAUNCH();
}

template void attention_softmax_forward<float>(float*, float*, const float*, const int32_t*, int, int64_t, int, int,
                                               cudaStream_t);
template void attention_softmax_forward<bf16>(bf16*, float*, const bf16*, const int32_t*, int, int64_t, int, int,
                                              cudaStream_t);
template void attention_softmax_backward<float>(float*, const float*, const float*, const float*, const float*,
                                                const int32_t*, int, int64_t, int, int, cudaStream_t);
template void attention_softmax_backward<bf16>(bf16*, const bf16*, const bf16*, const bf16*, const float*,
                                               const int32_t*, int, int64_t, int, int, cudaStream_t);

}  // namespace trident::cuda
