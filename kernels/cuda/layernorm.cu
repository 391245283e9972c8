#include "kernels/cuda/layernorm.h"

#include <algorithm>

#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/warp.cuh"
#include "kernels/shared/bf16.h"
#include "kernels/shared/layernorm.h"

namespace trident::cuda {

namespace {

// Parameter-gradient partials: a block covers kParamCols columns (one coalesced strip per row) of a fixed range of
// rows, walked by kParamLanes rows at a time. The row range depends only on N, so the sums are reproducible.
constexpr int kParamCols = 32;
constexpr int kParamLanes = 8;
constexpr int64_t kParamMinRows = 128;    // rows per block at least: enough work per thread
constexpr int64_t kParamMaxBlocks = 1024;  // row blocks at most: bounds the scratch and the final pass

template <class T>
__global__ void layernorm_forward_kernel(T* out, float* mean, float* rstd, const T* inp, const float* weight,
                                         const float* bias, int64_t N, int C) {
  const int lane = threadIdx.x % kWarp;
  TRIDENT_WARP_PER_ROW_LOOP(t, N) {
    const T* x = inp + t * C;
    float sum = 0.0f;
    for (int i = lane; i < C; i += kWarp) sum += to_float(x[i]);
    const float m = warp_sum(sum) / C;
    float sq = 0.0f;
    for (int i = lane; i < C; i += kWarp) {
      const float d = to_float(x[i]) - m;
      sq += d * d;
    }
    const float s = layernorm_rstd(warp_sum(sq), C);
    T* y = out + t * C;
    for (int i = lane; i < C; i += kWarp) y[i] = from_float<T>((to_float(x[i]) - m) * s * weight[i] + bias[i]);
    if (lane == 0) {
      mean[t] = m;
      rstd[t] = s;
    }
  }
}

template <class T>
__global__ void layernorm_backward_dinp_kernel(T* dinp, const T* dout, const T* inp, const float* weight,
                                               const float* mean, const float* rstd, int64_t N, int C) {
  const int lane = threadIdx.x % kWarp;
  TRIDENT_WARP_PER_ROW_LOOP(t, N) {
    const T* dy = dout + t * C;
    const T* x = inp + t * C;
    const float m = mean[t], s = rstd[t];
    float g_sum = 0.0f, gx_sum = 0.0f;
    for (int i = lane; i < C; i += kWarp) {
      const float g = to_float(dy[i]) * weight[i];
      g_sum += g;
      gx_sum += g * ((to_float(x[i]) - m) * s);
    }
    const float g_mean = warp_sum(g_sum) / C, gx_mean = warp_sum(gx_sum) / C;
    T* dx = dinp + t * C;
    for (int i = lane; i < C; i += kWarp) {
      const float xhat = (to_float(x[i]) - m) * s;
      const float d = layernorm_dinp(to_float(dy[i]) * weight[i], xhat, g_mean, gx_mean, s);
      dx[i] = from_float<T>(to_float(dx[i]) + d);
    }
  }
}

// blockDim (kParamCols, kParamLanes); blockIdx.x is the row block, blockIdx.y strides over column strips.
// dw_part, db_part (gridDim.x, C).
template <class T>
__global__ void layernorm_param_partials_kernel(float* dw_part, float* db_part, const T* dout, const T* inp,
                                                const float* mean, const float* rstd, int64_t N, int C,
                                                int64_t rows_per_block) {
  __shared__ float s_dw[kParamLanes][kParamCols];
  __shared__ float s_db[kParamLanes][kParamCols];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t r0 = static_cast<int64_t>(blockIdx.x) * rows_per_block;
  const int64_t r1 = r0 + rows_per_block < N ? r0 + rows_per_block : N;
  const int strip_stride = static_cast<int>(gridDim.y) * kParamCols;
  for (int c0 = static_cast<int>(blockIdx.y) * kParamCols; c0 < C; c0 += strip_stride) {  // uniform in the block
    const int c = c0 + tx;
    float dw = 0.0f, db = 0.0f;
    if (c < C) {
      for (int64_t r = r0 + ty; r < r1; r += kParamLanes) {
        const float dy = to_float(dout[r * C + c]);
        dw += dy * (to_float(inp[r * C + c]) - mean[r]) * rstd[r];
        db += dy;
      }
    }
    s_dw[ty][tx] = dw;
    s_db[ty][tx] = db;
    __syncthreads();
    if (ty == 0 && c < C) {
      float sw = 0.0f, sb = 0.0f;
      for (int k = 0; k < kParamLanes; ++k) {
        sw += s_dw[k][tx];
        sb += s_db[k][tx];
      }
      dw_part[static_cast<int64_t>(blockIdx.x) * C + c] = sw;
      db_part[static_cast<int64_t>(blockIdx.x) * C + c] = sb;
    }
    __syncthreads();  // the next strip reuses the shared arrays
  }
}

// One thread per column adds the row blocks' partials in block order.
__global__ void layernorm_param_sum_kernel(float* dweight, float* dbias, const float* dw_part, const float* db_part,
                                           int64_t blocks, int C) {
  TRIDENT_GRID_STRIDE_LOOP(c, C) {
    float sw = 0.0f, sb = 0.0f;
    for (int64_t b = 0; b < blocks; ++b) {
      sw += dw_part[b * C + c];
      sb += db_part[b * C + c];
    }
    dweight[c] += sw;
    dbias[c] += sb;
  }
}

int64_t param_rows_per_block(int64_t N) {
  return std::max(kParamMinRows, (N + kParamMaxBlocks - 1) / kParamMaxBlocks);
}

}  // namespace

std::size_t layernorm_backward_scratch_bytes(int64_t N, int C) {
  if (N == 0 || C == 0) return 0;
  const int64_t blocks = (N + param_rows_per_block(N) - 1) / param_rows_per_block(N);
  return static_cast<std::size_t>(2 * blocks * C) * sizeof(float);
}

// ---- launchers ----------------------------------------------------------------------------------------------------

template <class T>
void layernorm_forward(T* out, float* mean, float* rstd, const T* inp, const float* weight, const float* bias,
                       int64_t N, int C, cudaStream_t stream) {
  if (N == 0 || C == 0) return;
  TRIDENT_LAUNCH(row_kernel_blocks(N), kThreads, 0, stream, layernorm_forward_kernel<T>)(
      out, mean, rstd, inp, weight, bias, N, C);
  TRIDENT_CUDA_CHECK_LAUNCH();
}

template <class T>
void layernorm_backward(T* dinp, float* dweight, float* dbias, const T* dout, const T* inp, const float* weight,
                        const float* mean, const float* rstd, int64_t N, int C, cudaStream_t stream) {
  if (N == 0 || C == 0) return;
  TRIDENT_LAUNCH(row_kernel_blocks(N), kThreads, 0, stream, layernorm_backward_dinp_kernel<T>)(
      dinp, dout, inp, weight, mean, rstd, N, C);
  TRIDENT_CUDA_CHECK_LAUNCH();

  const int64_t rows_per_block = param_rows_per_block(N);
  const int64_t blocks = (N + rows_per_block - 1) / rows_per_block;  // <= kParamMaxBlocks
  const int strips = static_cast<int>(std::min<int64_t>((C + kParamCols - 1) / kParamCols, 65535));
  float* scratch = nullptr;
  TRIDENT_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&scratch), layernorm_backward_scratch_bytes(N, C),
                                     stream));
  float* dw_part = scratch;
  float* db_part = scratch + blocks * C;
  const dim3 grid(static_cast<unsigned>(blocks), strips), block(kParamCols, kParamLanes);
  TRIDENT_LAUNCH(grid, block, 0, stream, layernorm_param_partials_kernel<T>)(
      dw_part, db_part, dout, inp, mean, rstd, N, C, rows_per_block);
  TRIDENT_CUDA_CHECK_LAUNCH();
  TRIDENT_LAUNCH(elementwise_blocks(C), kThreads, 0, stream, layernorm_param_sum_kernel)(
      dweight, dbias, dw_part, db_part, blocks, C);
  TRIDENT_CUDA_CHECK_LAUNCH();
  TRIDENT_CUDA_CHECK(cudaFreeAsync(scratch, stream));
}

template void layernorm_forward<float>(float*, float*, float*, const float*, const float*, const float*, int64_t, int,
                                       cudaStream_t);
template void layernorm_forward<bf16>(bf16*, float*, float*, const bf16*, const float*, const float*, int64_t, int,
                                      cudaStream_t);
template void layernorm_backward<float>(float*, float*, float*, const float*, const float*, const float*,
                                        const float*, const float*, int64_t, int, cudaStream_t);
template void layernorm_backward<bf16>(bf16*, float*, float*, const bf16*, const bf16*, const float*, const float*,
                                       const float*, int64_t, int, cudaStream_t);

}  // namespace trident::cuda
