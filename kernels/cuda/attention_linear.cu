#include "kernels/cuda/attention_linear.h"

#include <cstddef>

#include "kernels/cuda/check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/shared/bf16.h"
#include "kernels/shared/decay.h"

// Forward and the three parts of backward are one recurrence over a sequence's chunks in four roles. With row
// operands X, Y (D wide), Z (a slice of columns) and a D x W slice St of a state, per chunk of length c:
//   out_r[w] += sum_{c' ~ r} decay(r, c') (x_r . y_c') z_c'[w]  +  rs_r (x_r . St[:, w])   (St entering the chunk)
//   St[:, w]  = block_decay(c) St[:, w] + sum_c' cs_c' y_c' z_c'[w]                        (St leaving the chunk)
// Forward passes (chunks in order) mask c' <= r with decay diag_decay(r, c'), rs = q_decay, cs = k_decay;
// reverse passes (chunks in reverse) mask c' >= r with diag_decay(c', r), rs = k_decay, cs = q_decay.
// In docs/methods.md §1's notation (St is S or dS, sliced by columns b or, transposed, by rows a):
//   forward  X=Q  Y=K  Z=V[:, b]   St[a][w] = S[a][b]    out = O       forward pass,  O_intra + O_inter, S_t
//   dQ       X=dO Y=V  Z=K[:, a]   St[b][w] = S[a][b]    out = dQ      forward pass
//   dK       X=V  Y=dO Z=Q[:, a]   St[b][w] = dS[a][b]   out = dK      reverse pass,  dS_{t-1}
//   dV       X=K  Y=Q  Z=dO[:, b]  St[a][w] = dS[a][b]   out = dV      reverse pass
// Each output column and each state entry depends on one column of Z and of St only, so a block owns one
// (sequence, head, 32-column slice) and walks the sequence's chunks with its St slice in shared memory: no block
// needs another's results, no atomics, every output element is one thread's fixed-order sum (deterministic), and
// the backward needs no stored per-chunk states (dQ runs forward through S, dK and dV backward through dS).
// The price is recomputing the scores X Y^T once per slice and the state recurrence in both dQ/dK and dV.
//
// Within a chunk, rows are handled in 32-row tiles (any `chunk` works, its intra product tile by tile): warp w
// owns rows 4w..4w+3 of a tile; a lane owns key c' = lane when forming scores and column w = lane when
// accumulating outputs and when updating St (rows e = w, w+8, ... of St per warp).

namespace trident::cuda {

namespace {

constexpr int kLinearWarps = 8;
constexpr int kLinearThreads = 32 * kLinearWarps;
constexpr int kTile = 32;  // rows of a tile of a chunk; a lane owns one key c' of a tile
constexpr int kRowsPerWarp = kTile / kLinearWarps;
constexpr int kSlice = 32;  // state columns per block; a lane owns one
static_assert(kTile == 32 && kSlice == 32, "a lane owns one key of a tile and one column of a slice");

__host__ __device__ int odd_stride(int D) { return D | 1; }  // odd: lanes reading a column of 32 rows, no conflicts

// One pass of the recurrence. Operand pointers are at column 0 of their part (q, k, v of qkv, or dout); the kernel
// adds the head's offset h*D, and for z and out the slice's first column.
template <class T>
struct Pass {
  const T* x;
  int64_t ldx;
  const T* y;
  int64_t ldy;
  const T* z;
  int64_t ldz;
  T* out;
  int64_t ldo;
  bool accumulate;          // out += (backward) or out = (forward)
  bool transposed;          // St[e][w] is S[col0 + w][e] (slices of rows a) instead of S[e][col0 + w]
  const float* state_init;  // (n_seq, H, D, D) or nullptr for zeros
  float* state_final;       // (n_seq, H, D, D) or nullptr
  bool final_accumulate;    // state_final += St instead of =
};

// dst (kTile x lds, fp32) <- `rows` rows of D values `ld` apart from src, zeros past `rows`; coalesced along rows.
template <class T>
__device__ void load_tile_rows(float* dst, int lds, const T* src, int64_t ld, int rows, int D) {
  for (int idx = threadIdx.x; idx < kTile * D; idx += blockDim.x) {
    const int r = idx / D, d = idx - r * D;
    dst[r * lds + d] = r < rows ? to_float(src[r * ld + d]) : 0.0f;
  }
}

// dst (kTile x kSlice) <- `rows` x `width` values from src (rows `ld` apart), zeros elsewhere.
template <class T>
__device__ void load_slice(float* dst, const T* src, int64_t ld, int rows, int width) {
  for (int idx = threadIdx.x; idx < kTile * kSlice; idx += blockDim.x) {
    const int r = idx / kSlice, w = idx - r * kSlice;
    dst[idx] = r < rows && w < width ? to_float(src[r * ld + w]) : 0.0f;
  }
}

// Offset in a (D, D) state of the slice's entry St[e][w]. Threads walk the slice in the state's row-major order,
// so the state_init / state_final copies are coalesced.
__device__ int64_t state_offset(bool transposed, int e, int w, int col0, int D) {
  return transposed ? int64_t(col0 + w) * D + e : int64_t(e) * D + col0 + w;
}
__device__ void slice_entry(bool transposed, int idx, int D, int& e, int& w) {
  if (transposed) {
    w = idx / D;
    e = idx - w * D;
  } else {
    e = idx / kSlice;
    w = idx - e * kSlice;
  }
}

template <class T, bool kReverse>
__global__ void __launch_bounds__(kLinearThreads)
    attention_linear_pass_kernel(Pass<T> p, const float* slopes, const int32_t* cu_seqlens, int H, int D, int chunk,
                                 int n_slices) {
  const int slice = int(blockIdx.x % n_slices);
  const int h = int(blockIdx.x / n_slices % H);
  const int seq = int(blockIdx.x / n_slices / H);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int col0 = slice * kSlice, width = min(kSlice, D - col0);
  const int64_t t0 = cu_seqlens[seq];
  const int n = cu_seqlens[seq + 1] - cu_seqlens[seq];
  const int64_t slot = (int64_t(seq) * H + h) * D * D;
  const float s = slopes[h];
  const int lds = odd_stride(D);

  TRIDENT_DYNAMIC_SHARED(float, smem);
  float* Xs = smem;                 // kTile x lds: the row tile
  float* Ys = Xs + kTile * lds;     // kTile x lds: the key tile
  float* Zs = Ys + kTile * lds;     // kTile x kSlice
  float* As = Zs + kTile * kSlice;  // kTile x kTile: masked, decayed scores; rows of warp w used by warp w only
  float* cs = As + kTile * kTile;   // kTile: the key tile's state-update scales
  float* St = cs + kTile;           // D x kSlice

  for (int idx = threadIdx.x; idx < D * kSlice; idx += blockDim.x) {
    int e, w;
    slice_entry(p.transposed, idx, D, e, w);
    St[e * kSlice + w] = p.state_init && w < width ? p.state_init[slot + state_offset(p.transposed, e, w, col0, D)]
                                                   : 0.0f;
  }

  // Chunks of cmax rows from the sequence's start, the last one shorter (as on the CPU).
  const int cmax = min(chunk, n);
  const int n_chunks = cmax > 0 ? (n + cmax - 1) / cmax : 0;
  for (int step = 0; step < n_chunks; ++step) {
    const int t = kReverse ? n_chunks - 1 - step : step;
    const int64_t i0 = t0 + int64_t(t) * cmax;  // first token of the chunk
    const int c = min(cmax, n - t * cmax);

    // Outputs of the chunk's rows, from the state entering the chunk.
    for (int r0 = 0; r0 < c; r0 += kTile) {
      const int rn = min(kTile, c - r0);
      __syncthreads();  // the previous tile's Xs, and St's last update, are done
      load_tile_rows(Xs, lds, p.x + (i0 + r0) * p.ldx + h * D, p.ldx, rn, D);
      __syncthreads();

      float acc[kRowsPerWarp];
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {  // inter-chunk: rs_r (x_r . St[:, w])
        const int row = warp * kRowsPerWarp + r, i = r0 + row;
        float sum = 0.0f;
        for (int e = 0; e < D; ++e) sum += Xs[row * lds + e] * St[e * kSlice + lane];
        acc[r] = (kReverse ? k_decay(s, i, c) : q_decay(s, i)) * sum;
      }

      // Intra-chunk: the key tiles on the masked side of the diagonal (tiles are aligned, so tile c0 == r0 holds
      // the diagonal).
      const int c_begin = kReverse ? r0 : 0, c_end = kReverse ? c : r0 + 1;
      for (int c0 = c_begin; c0 < c_end; c0 += kTile) {
        const int cn = min(kTile, c - c0);
        __syncthreads();  // the previous key tile is no longer read
        load_tile_rows(Ys, lds, p.y + (i0 + c0) * p.ldy + h * D, p.ldy, cn, D);
        load_slice(Zs, p.z + (i0 + c0) * p.ldz + h * D + col0, p.ldz, cn, width);
        __syncthreads();

        float a[kRowsPerWarp] = {};
        for (int e = 0; e < D; ++e) {
          const float y = Ys[lane * lds + e];
#pragma unroll
          for (int r = 0; r < kRowsPerWarp; ++r) a[r] += Xs[(warp * kRowsPerWarp + r) * lds + e] * y;
        }
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; ++r) {
          const int row = warp * kRowsPerWarp + r, i = r0 + row, j = c0 + lane;
          const bool valid = row < rn && lane < cn && (kReverse ? j >= i : j <= i);
          As[row * kTile + lane] = valid ? a[r] * (kReverse ? diag_decay(s, j, i) : diag_decay(s, i, j)) : 0.0f;
        }
        __syncwarp();
        for (int cc = 0; cc < cn; ++cc) {
          const float zv = Zs[cc * kSlice + lane];
#pragma unroll
          for (int r = 0; r < kRowsPerWarp; ++r) acc[r] += As[(warp * kRowsPerWarp + r) * kTile + cc] * zv;
        }
        __syncwarp();  // this warp's As rows are rewritten by the next key tile
      }

#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        const int row = warp * kRowsPerWarp + r;
        if (row < rn && lane < width) {
          T* o = p.out + (i0 + r0 + row) * p.ldo + h * D + col0 + lane;
          *o = from_float<T>(p.accumulate ? to_float(*o) + acc[r] : acc[r]);
        }
      }
    }

    // The state leaving the chunk. Thread (warp, lane) owns entries St[e][lane], e = warp, warp + 8, ...; nobody
    // else touches them until the next __syncthreads.
    const float bd = block_decay(s, c);
    for (int c0 = 0; c0 < c; c0 += kTile) {
      const int cn = min(kTile, c - c0);
      __syncthreads();  // every read of St and of the previous Ys / Zs is done
      load_tile_rows(Ys, lds, p.y + (i0 + c0) * p.ldy + h * D, p.ldy, cn, D);
      load_slice(Zs, p.z + (i0 + c0) * p.ldz + h * D + col0, p.ldz, cn, width);
      for (int cc = threadIdx.x; cc < kTile; cc += blockDim.x)
        cs[cc] = cc < cn ? (kReverse ? q_decay(s, c0 + cc) : k_decay(s, c0 + cc, c)) : 0.0f;
      __syncthreads();
      for (int e = warp; e < D; e += kLinearWarps) {
        float v = St[e * kSlice + lane];
        if (c0 == 0) v *= bd;
        for (int cc = 0; cc < cn; ++cc) v += cs[cc] * Ys[cc * lds + e] * Zs[cc * kSlice + lane];
        St[e * kSlice + lane] = v;
      }
    }
  }

  if (!p.state_final) return;
  __syncthreads();  // St's last update is done
  for (int idx = threadIdx.x; idx < D * kSlice; idx += blockDim.x) {
    int e, w;
    slice_entry(p.transposed, idx, D, e, w);
    if (w >= width) continue;
    float* dst = p.state_final + slot + state_offset(p.transposed, e, w, col0, D);
    *dst = p.final_accumulate ? *dst + St[e * kSlice + w] : St[e * kSlice + w];
  }
}

// Argument errors surface as a RuntimeError naming the failed condition, like a CUDA error.
#define TRIDENT_ATTN_REQUIRE(cond)                                                   \
  do {                                                                               \
    if (!(cond)) throw_cuda_error(cudaErrorInvalidValue, #cond, __FILE__, __LINE__); \
  } while (0)

template <class T, bool kReverse>
void launch_pass(const Pass<T>& p, const float* slopes, const int32_t* cu_seqlens, int n_seq, int H, int D,
                 int chunk, cudaStream_t stream) {
  const int n_slices = (D + kSlice - 1) / kSlice;
  const int64_t blocks = int64_t(n_seq) * H * n_slices;
  TRIDENT_ATTN_REQUIRE(blocks <= INT32_MAX);
  if (blocks == 0) return;
  const int lds = odd_stride(D);
  const std::size_t smem =
      sizeof(float) * (std::size_t(2 * kTile) * lds + kTile * kSlice + kTile * kTile + kTile + std::size_t(D) * kSlice);
  // Above the default 48 KiB a kernel must opt in to its dynamic shared memory.
  if (smem > 48 * 1024)
    TRIDENT_CUDA_CHECK(cudaFuncSetAttribute(attention_linear_pass_kernel<T, kReverse>,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  TRIDENT_LAUNCH(unsigned(blocks), kLinearThreads, smem, stream, attention_linear_pass_kernel<T, kReverse>)(
      p, slopes, cu_seqlens, H, D, chunk, n_slices);
  TRIDENT_CUDA_CHECK_LAUNCH();
}

void check_args(int n_seq, int H, int D, int chunk) {
  TRIDENT_ATTN_REQUIRE(n_seq >= 0 && H >= 1 && D >= 1 && chunk >= 1);
}

}  // namespace

// ---- launchers ----------------------------------------------------------------------------------------------------

template <class T>
void attention_linear_forward(T* out, float* state_out, const T* qkv, const float* slopes, const float* state_in,
                              const int32_t* cu_seqlens, int n_seq, int64_t N, int H, int D, int chunk,
                              cudaStream_t stream) {
  check_args(n_seq, H, D, chunk);
  const int64_t C = int64_t(H) * D, ld = 3 * C;
  const Pass<T> fwd{qkv, ld, qkv + C, ld, qkv + 2 * C, ld, out, C, false, false, state_in, state_out, false};
  launch_pass<T, false>(fwd, slopes, cu_seqlens, n_seq, H, D, chunk, stream);
}

// Three independent passes writing disjoint parts of dqkv (and only dK's writes dstate_in).
template <class T>
void attention_linear_backward(T* dqkv, float* dstate_in, const T* dout, const float* dstate_out, const T* qkv,
                               const float* slopes, const float* state_in, const int32_t* cu_seqlens, int n_seq,
                               int64_t N, int H, int D, int chunk, cudaStream_t stream) {
  check_args(n_seq, H, D, chunk);
  const int64_t C = int64_t(H) * D, ld = 3 * C;
  const T *q = qkv, *k = qkv + C, *v = qkv + 2 * C;
  const Pass<T> dq{dout, C, v, ld, k, ld, dqkv, ld, true, true, state_in, nullptr, false};
  const Pass<T> dk{v, ld, dout, C, q, ld, dqkv + C, ld, true, true, dstate_out, dstate_in, true};
  const Pass<T> dv{k, ld, q, ld, dout, C, dqkv + 2 * C, ld, true, false, dstate_out, nullptr, false};
  launch_pass<T, false>(dq, slopes, cu_seqlens, n_seq, H, D, chunk, stream);
  launch_pass<T, true>(dk, slopes, cu_seqlens, n_seq, H, D, chunk, stream);
  launch_pass<T, true>(dv, slopes, cu_seqlens, n_seq, H, D, chunk, stream);
}

template void attention_linear_forward<float>(float*, float*, const float*, const float*, const float*,
                                              const int32_t*, int, int64_t, int, int, int, cudaStream_t);
template void attention_linear_forward<bf16>(bf16*, float*, const bf16*, const float*, const float*, const int32_t*,
                                             int, int64_t, int, int, int, cudaStream_t);
template void attention_linear_backward<float>(float*, float*, const float*, const float*, const float*,
                                               const float*, const float*, const int32_t*, int, int64_t, int, int,
                                               int, cudaStream_t);
template void attention_linear_backward<bf16>(bf16*, float*, const bf16*, const float*, const bf16*, const float*,
                                              const float*, const int32_t*, int, int64_t, int, int, int,
                                              cudaStream_t);

}  // namespace trident::cuda
