#include "kernels/cuda/attention_block.h"

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/cuda/attention_tiles.cuh"
#include "kernels/cuda/check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/warp.cuh"
#include "kernels/shared/exp.h"
#include "kernels/shared/online_softmax.h"

// n local query rows (global positions q_pos0 ..) against one block of n_k keys (global positions k_pos0 ..), each
// query seeing the keys of global positions [doc_begin, p] (kernels/cpu/attention_block.h). Five kernels:
//   forward   one block per (64-row query tile, head): the tile's running m, l and acc come in from global memory,
//             the key block's 32-key tiles fold into them with the online softmax, and they go back out.
//   finish    out = acc / l and lse = m + log l, per element.
//   delta     rowsum(dout * out), a warp per (row, head).
//   dQ        one block per (32-row query tile, head), looping over the key tiles.
//   dK, dV    one block per (32-key tile, head), looping over the query tiles.
// Tiles that the mask hides entirely are skipped. As in attention_softmax.cu, dQ and dK/dV are separate kernels with
// no atomics, so every output element is the sum of one thread in a fixed order: results are bit-identical run to
// run. The tile layout and the shared pieces are in kernels/cuda/attention_tiles.cuh.

namespace trident::cuda {

namespace {

using namespace attention;

// Whether the query at global position p, whose document starts at `first`, sees the key at global position k.
__device__ __forceinline__ bool sees(int64_t p, int64_t first, int64_t k) { return first <= k && k <= p; }

// Whether query rows at positions [p0, p0 + rows) see nothing of the keys at [k0, k0 + keys): all keys come after the
// last query, or before the document of the first (doc_begin does not decrease along the rows).
__device__ __forceinline__ bool tile_masked(int64_t p0, int rows, int64_t first, int64_t k0, int keys) {
  return k0 > p0 + rows - 1 || k0 + keys <= first;
}

// dst[r] = doc_begin of the tile's row r; rows past `rows` get INT64_MAX, which sees no key.
__device__ void load_doc_begins(int64_t* dst, const int64_t* src, int rows, int tile_rows) {
  for (int r = threadIdx.x; r < tile_rows; r += blockDim.x) dst[r] = r < rows ? src[r] : INT64_MAX;
}

// Shared memory starts with the int64 document starts (8-byte aligned at the base), then the fp32 tiles.
__device__ float* after_doc_begins(float* smem, int tile_rows) { return smem + 2 * tile_rows; }

// The forward: warp w owns query rows 8w..8w+7 of the tile, as in attention_softmax.cu's forward; rows past the
// tile's end carry a dummy state and are not written back.
__global__ void __launch_bounds__(kBlockThreads)
    attention_block_forward_kernel(float* m_all, float* l_all, float* acc_all, const float* q, int64_t ld_q, int64_t n,
                                   int64_t q_pos0, const int64_t* doc_begin, const float* kv, int64_t n_k,
                                   int64_t k_pos0, int H, int D, float scale) {
  const int h = blockIdx.y, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t C = int64_t(H) * D, r0 = int64_t(blockIdx.x) * kFwdRows;
  const int br = int(min(int64_t(kFwdRows), n - r0)), lds = padded_stride(D);
  const int64_t p0 = q_pos0 + r0;  // global position of the tile's first query

  TRIDENT_DYNAMIC_SHARED(float, smem);
  int64_t* docs = reinterpret_cast<int64_t*>(smem);    // kFwdRows
  float* Qs = after_doc_begins(smem, kFwdRows);  //        kFwdRows x lds
  float* Ks = Qs + kFwdRows * lds;                      // kKeys x lds
  float* Vs = Ks + kKeys * lds;                         // kKeys x lds
  float* Ps = Vs + kKeys * lds;                         // kFwdRows x kKeys, rows of warp w for warp w only

  load_rows(Qs, lds, q + r0 * ld_q + h * D, ld_q, br, kFwdRows, D);
  load_doc_begins(docs, doc_begin + r0, br, kFwdRows);

  float acc[kFwdRowsPerWarp][kDPerLane] = {};
  float m[kFwdRowsPerWarp], l[kFwdRowsPerWarp];
#pragma unroll
  for (int r = 0; r < kFwdRowsPerWarp; ++r) {
    const int row = warp * kFwdRowsPerWarp + r;
    m[r] = row < br ? m_all[h * n + r0 + row] : -INFINITY;
    l[r] = row < br ? l_all[h * n + r0 + row] : 0.0f;
#pragma unroll
    for (int k = 0; k < kDPerLane; ++k) {
      const int d = lane + 32 * k;
      if (row < br && d < D) acc[r][k] = acc_all[(r0 + row) * C + h * D + d];
    }
  }
  __syncthreads();  // docs
  const int64_t first = docs[0];

  for (int64_t j0 = 0; j0 < n_k; j0 += kKeys) {
    const int bc = int(min(int64_t(kKeys), n_k - j0));
    const int64_t k0 = k_pos0 + j0;
    if (tile_masked(p0, br, first, k0, bc)) continue;  // the same for the whole block
    const float* k_rows = kv + j0 * 2 * C + h * D;
    __syncthreads();  // the previous K and V tiles are no longer read
    load_rows(Ks, lds, k_rows, 2 * C, bc, kKeys, D);
    load_rows(Vs, lds, k_rows + C, 2 * C, bc, kKeys, D);
    __syncthreads();

    // Rows past the tile's end have docs = INT64_MAX: they see nothing.
    fold_key_tile(m, l, acc, Qs, Ks, Vs, Ps, bc, lds, D, scale,
                  [&](int row, int key) { return key < bc && sees(p0 + row, docs[row], k0 + key); });
  }

#pragma unroll
  for (int r = 0; r < kFwdRowsPerWarp; ++r) {
    const int row = warp * kFwdRowsPerWarp + r;
    if (row >= br) continue;
    if (lane == 0) {
      m_all[h * n + r0 + row] = m[r];
      l_all[h * n + r0 + row] = l[r];
    }
#pragma unroll
    for (int k = 0; k < kDPerLane; ++k) {
      const int d = lane + 32 * k;
      if (d < D) acc_all[(r0 + row) * C + h * D + d] = acc[r][k];
    }
  }
}

__global__ void attention_block_finish_kernel(float* out, float* lse, const float* m, const float* l,
                                              const float* acc, int64_t n, int H, int D) {
  const int64_t C = int64_t(H) * D;
  TRIDENT_GRID_STRIDE_LOOP(i, n * C) {
    const int64_t row = i / C;
    const int h = int((i - row * C) / D);
    const float inv_l = 1.0f / l[h * n + row];
    out[i] = acc[i] * inv_l;
  }
  TRIDENT_GRID_STRIDE_LOOP(i, n * H) lse[i] = online_softmax_lse(m[i], l[i]);  // (H, n) both
}

// A warp per (head, row) item h * n + i, lanes over the head's columns.
__global__ void attention_block_delta_kernel(float* delta, const float* out, const float* dout, int64_t n, int H,
                                             int D) {
  const int64_t C = int64_t(H) * D;
  const int lane = threadIdx.x % 32;
  TRIDENT_WARP_PER_ROW_LOOP(item, n * H) {
    const int h = int(item / n);
    const int64_t i = item - h * n;
    float sum = 0.0f;
    for (int d = lane; d < D; d += 32) sum += dout[i * C + h * D + d] * out[i * C + h * D + d];
    sum = warp_sum(sum);
    if (lane == 0) delta[item] = sum;
  }
}

// dQ: warp w owns query rows 4w..4w+3. Per key tile a lane forms, for key `lane`, P = exp(scale q.k - lse) and
// dP = dO.v; dS = P (dP - delta) goes through shared memory to dQ += scale dS K.
__global__ void __launch_bounds__(kBlockThreads)
    attention_block_backward_dq_kernel(float* dq, int64_t ld_dq, const float* q, int64_t ld_q, int64_t n,
                                       int64_t q_pos0, const int64_t* doc_begin, const float* dout, const float* lse,
                                       const float* delta, const float* kv, int64_t n_k, int64_t k_pos0, int H, int D,
                                       float scale) {
  const int h = blockIdx.y, warp = threadIdx.x / 32;
  const int64_t C = int64_t(H) * D, r0 = int64_t(blockIdx.x) * kBwdRows;
  const int br = int(min(int64_t(kBwdRows), n - r0)), lds = padded_stride(D);
  const int64_t p0 = q_pos0 + r0;

  TRIDENT_DYNAMIC_SHARED(float, smem);
  int64_t* docs = reinterpret_cast<int64_t*>(smem);    // kBwdRows
  float* Qs = after_doc_begins(smem, kBwdRows);  //        kBwdRows x lds
  float* dOs = Qs + kBwdRows * lds;                     // kBwdRows x lds
  float* Ks = dOs + kBwdRows * lds;                     // kKeys x lds
  float* Vs = Ks + kKeys * lds;                         // kKeys x lds
  float* dSs = Vs + kKeys * lds;                        // kBwdRows x kKeys, per warp
  float* lse_s = dSs + kBwdRows * kKeys;                // kBwdRows
  float* delta_s = lse_s + kBwdRows;                    // kBwdRows

  load_rows(Qs, lds, q + r0 * ld_q + h * D, ld_q, br, kBwdRows, D);
  load_rows(dOs, lds, dout + r0 * C + h * D, C, br, kBwdRows, D);
  load_row_values(lse_s, lse + h * n + r0, br, kBwdRows);
  load_row_values(delta_s, delta + h * n + r0, br, kBwdRows);
  load_doc_begins(docs, doc_begin + r0, br, kBwdRows);
  __syncthreads();
  const int64_t first = docs[0];

  float acc[kBwdRowsPerWarp][kDPerLane] = {};
  for (int64_t j0 = 0; j0 < n_k; j0 += kKeys) {
    const int bc = int(min(int64_t(kKeys), n_k - j0));
    const int64_t k0 = k_pos0 + j0;
    if (tile_masked(p0, br, first, k0, bc)) continue;
    const float* k_rows = kv + j0 * 2 * C + h * D;
    __syncthreads();
    load_rows(Ks, lds, k_rows, 2 * C, bc, kKeys, D);
    load_rows(Vs, lds, k_rows + C, 2 * C, bc, kKeys, D);
    __syncthreads();

    dq_key_tile(acc, Qs, dOs, Ks, Vs, dSs, lse_s, delta_s, bc, lds, D, scale,
                [&](int row, int key) { return key < bc && sees(p0 + row, docs[row], k0 + key); });
  }

#pragma unroll
  for (int r = 0; r < kBwdRowsPerWarp; ++r) {
    const int row = warp * kBwdRowsPerWarp + r;
    if (row < br) add_lane_columns(dq + (r0 + row) * ld_dq + h * D, acc[r], scale, D);
  }
}

// dK, dV: warp w owns keys 4w..4w+3 of the key tile. Per query tile a lane forms P and dS for query `lane` against
// its warp's keys; they go through shared memory to dV += P^T dO and dK += scale dS^T Q.
__global__ void __launch_bounds__(kBlockThreads)
    attention_block_backward_dkdv_kernel(float* dkv, const float* q, int64_t ld_q, int64_t n, int64_t q_pos0,
                                         const int64_t* doc_begin, const float* dout, const float* lse,
                                         const float* delta, const float* kv, int64_t n_k, int64_t k_pos0, int H,
                                         int D, float scale) {
  const int h = blockIdx.y, warp = threadIdx.x / 32;
  const int64_t C = int64_t(H) * D, j0 = int64_t(blockIdx.x) * kBwdRows;
  const int bc = int(min(int64_t(kBwdRows), n_k - j0)), lds = padded_stride(D);
  const int64_t k0 = k_pos0 + j0;  // global position of the tile's first key

  TRIDENT_DYNAMIC_SHARED(float, smem);
  int64_t* docs = reinterpret_cast<int64_t*>(smem);  // kKeys (the query tile's)
  float* Ks = after_doc_begins(smem, kKeys);   //        kBwdRows x lds
  float* Vs = Ks + kBwdRows * lds;                    // kBwdRows x lds
  float* Qs = Vs + kBwdRows * lds;                    // kKeys x lds
  float* dOs = Qs + kKeys * lds;                      // kKeys x lds
  float* Pt = dOs + kKeys * lds;                      // kBwdRows x kKeys: P^T, rows of warp w for warp w only
  float* dSt = Pt + kBwdRows * kKeys;                 // kBwdRows x kKeys: dS^T, likewise
  float* lse_s = dSt + kBwdRows * kKeys;              // kKeys
  float* delta_s = lse_s + kKeys;                     // kKeys

  load_rows(Ks, lds, kv + j0 * 2 * C + h * D, 2 * C, bc, kBwdRows, D);
  load_rows(Vs, lds, kv + j0 * 2 * C + C + h * D, 2 * C, bc, kBwdRows, D);

  float dk[kBwdRowsPerWarp][kDPerLane] = {}, dv[kBwdRowsPerWarp][kDPerLane] = {};
  for (int64_t i0 = 0; i0 < n; i0 += kKeys) {
    const int br = int(min(int64_t(kKeys), n - i0));
    const int64_t p0 = q_pos0 + i0;
    if (tile_masked(p0, br, doc_begin[i0], k0, bc)) continue;  // the same for the whole block
    __syncthreads();  // the previous query tile is no longer read
    load_rows(Qs, lds, q + i0 * ld_q + h * D, ld_q, br, kKeys, D);
    load_rows(dOs, lds, dout + i0 * C + h * D, C, br, kKeys, D);
    load_row_values(lse_s, lse + h * n + i0, br, kKeys);
    load_row_values(delta_s, delta + h * n + i0, br, kKeys);
    load_doc_begins(docs, doc_begin + i0, br, kKeys);
    __syncthreads();

    dkdv_query_tile(dk, dv, Ks, Vs, Qs, dOs, Pt, dSt, lse_s, delta_s, br, lds, D, scale,
                    [&](int key, int query) { return key < bc && sees(p0 + query, docs[query], k0 + key); });
  }

#pragma unroll
  for (int r = 0; r < kBwdRowsPerWarp; ++r) {
    const int key = warp * kBwdRowsPerWarp + r;
    if (key >= bc) continue;
    float* dk_row = dkv + (j0 + key) * 2 * C + h * D;
    add_lane_columns(dk_row, dk[r], scale, D);
    add_lane_columns(dk_row + C, dv[r], 1.0f, D);
  }
}

void check_args(int64_t n, int64_t n_k, int H, int D) {
  TRIDENT_ATTN_REQUIRE(n >= 0 && n <= INT32_MAX && n_k >= 0 && n_k <= INT32_MAX);
  check_heads(H, D);
}

unsigned tiles(int64_t rows, int tile) { return unsigned((rows + tile - 1) / tile); }

}  // namespace

// ---- launchers ----------------------------------------------------------------------------------------------------

void attention_block_forward(float* m, float* l, float* acc, const float* q, int64_t ld_q, int64_t n, int64_t q_pos0,
                             const int64_t* doc_begin, const float* kv, int64_t n_k, int64_t k_pos0, int H, int D,
                             cudaStream_t stream) {
  check_args(n, n_k, H, D);
  if (n == 0 || n_k == 0) return;
  const int lds = padded_stride(D);
  const std::size_t smem =
      sizeof(float) * (2 * kFwdRows + std::size_t(kFwdRows + 2 * kKeys) * lds + kFwdRows * kKeys);
  allow_shared_memory(attention_block_forward_kernel, smem);
  const dim3 grid(tiles(n, kFwdRows), H);
  TRIDENT_LAUNCH(grid, kBlockThreads, smem, stream, attention_block_forward_kernel)(
      m, l, acc, q, ld_q, n, q_pos0, doc_begin, kv, n_k, k_pos0, H, D, softmax_scale(D));
  TRIDENT_CUDA_CHECK_LAUNCH();
}

void attention_block_finish(float* out, float* lse, const float* m, const float* l, const float* acc, int64_t n,
                            int H, int D, cudaStream_t stream) {
  check_args(n, 0, H, D);
  if (n == 0) return;
  TRIDENT_LAUNCH(elementwise_blocks(n * H * D), kThreads, 0, stream, attention_block_finish_kernel)(
      out, lse, m, l, acc, n, H, D);
  TRIDENT_CUDA_CHECK_LAUNCH();
}

void attention_block_delta(float* delta, const float* out, const float* dout, int64_t n, int H, int D,
                           cudaStream_t stream) {
  check_args(n, 0, H, D);
  if (n == 0) return;
  TRIDENT_LAUNCH(row_kernel_blocks(n * H), kThreads, 0, stream, attention_block_delta_kernel)(
      delta, out, dout, n, H, D);
  TRIDENT_CUDA_CHECK_LAUNCH();
}

void attention_block_backward(float* dq, int64_t ld_dq, float* dkv, const float* q, int64_t ld_q, int64_t n,
                              int64_t q_pos0, const int64_t* doc_begin, const float* dout, const float* lse,
                              const float* delta, const float* kv, int64_t n_k, int64_t k_pos0, int H, int D,
                              cudaStream_t stream) {
  check_args(n, n_k, H, D);
  if (n == 0 || n_k == 0) return;
  const int lds = padded_stride(D);
  const float scale = softmax_scale(D);

  // dQ and dK/dV write different buffers, so their order does not matter.
  const std::size_t dq_smem = sizeof(float) * (2 * kBwdRows + std::size_t(2 * kBwdRows + 2 * kKeys) * lds +
                                               kBwdRows * kKeys + 2 * kBwdRows);
  allow_shared_memory(attention_block_backward_dq_kernel, dq_smem);
  const dim3 dq_grid(tiles(n, kBwdRows), H);
  TRIDENT_LAUNCH(dq_grid, kBlockThreads, dq_smem, stream, attention_block_backward_dq_kernel)(
      dq, ld_dq, q, ld_q, n, q_pos0, doc_begin, dout, lse, delta, kv, n_k, k_pos0, H, D, scale);
  TRIDENT_CUDA_CHECK_LAUNCH();

  const std::size_t dkdv_smem = sizeof(float) * (2 * kKeys + std::size_t(2 * kBwdRows + 2 * kKeys) * lds +
                                                 2 * kBwdRows * kKeys + 2 * kKeys);
  allow_shared_memory(attention_block_backward_dkdv_kernel, dkdv_smem);
  const dim3 dkdv_grid(tiles(n_k, kBwdRows), H);
  TRIDENT_LAUNCH(dkdv_grid, kBlockThreads, dkdv_smem, stream, attention_block_backward_dkdv_kernel)(
      dkv, q, ld_q, n, q_pos0, doc_begin, dout, lse, delta, kv, n_k, k_pos0, H, D, scale);
  TRIDENT_CUDA_CHECK_LAUNCH();
}

}  // namespace trident::cuda
