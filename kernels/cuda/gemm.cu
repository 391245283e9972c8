#include <map>
#include <type_traits>
#include <vector>

#include "kernels/cuda/gemm.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/shared/bf16.h"

namespace trident::cuda {

namespace {

// C = beta * C over `batch` strided M x N matrices: the K == 0 case, which cuBLAS may reject (lda = K = 0) instead
// of treating as BLAS does. beta == 0 writes zeros, so NaN in an uninitialised C does not survive.
template <class TC>
__global__ void scale_kernel(TC* C, int64_t M, int64_t N, int64_t ldc, int64_t stride_c, int64_t batch, float beta) {
  const int64_t per_matrix = M * N;
  TRIDENT_GRID_STRIDE_LOOP(i, batch * per_matrix) {
    const int64_t b = i / per_matrix, r = (i % per_matrix) / N, c = i % N;
    TC* p = C + b * stride_c + r * ldc + c;
    *p = beta == 0.0f ? from_float<TC>(0.0f) : from_float<TC>(beta * to_float(*p));
  }
}

// The cuBLAS handles of one thread, one per device, each with its own workspace per stream; all freed when the
// thread exits.
class ThreadHandles {
 public:
  ThreadHandles() = default;
  ThreadHandles(const ThreadHandles&) = delete;
  ThreadHandles& operator=(const ThreadHandles&) = delete;
  ~ThreadHandles() {
    // Errors are ignored: at process exit the driver may already be shutting down, and there is nobody to tell.
    int current = 0;
    const bool restore = cudaGetDevice(&current) == cudaSuccess;
    for (std::size_t d = 0; d < devices_.size(); ++d) {
      if (devices_[d].handle == nullptr || cudaSetDevice(static_cast<int>(d)) != cudaSuccess) continue;
      cublasDestroy(devices_[d].handle);
      for (const auto& [stream, workspace] : devices_[d].workspaces) cudaFree(workspace);
    }
    if (restore) cudaSetDevice(current);
  }

  // The handle for `device`, bound to `stream` and that stream's workspace.
  cublasHandle_t bind(int device, cudaStream_t stream) {
    if (static_cast<std::size_t>(device) >= devices_.size()) devices_.resize(device + 1);
    PerDevice& d = devices_[device];
    if (d.handle == nullptr) {
      TRIDENT_CUBLAS_CHECK(cublasCreate(&d.handle));
      // No TF32 unless a call asks for it, and no reductions in bf16: cuBLAS may otherwise sum split-K partial
      // products in the output type, rounding a bf16 result more than once.
      TRIDENT_CUBLAS_CHECK(cublasSetMathMode(d.handle, static_cast<cublasMath_t>(
                                                           CUBLAS_DEFAULT_MATH |
                                                           CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
    }
    if (d.bound && d.stream == stream) return d.handle;
    const std::size_t bytes = cublas_workspace_bytes(device);
    void*& workspace = d.workspaces[stream];
    if (workspace == nullptr) TRIDENT_CUDA_CHECK(cudaMalloc(&workspace, bytes));
    // cublasSetStream puts the handle back on cuBLAS's own workspace pool, so ours is set after it.
    TRIDENT_CUBLAS_CHECK(cublasSetStream(d.handle, stream));
    TRIDENT_CUBLAS_CHECK(cublasSetWorkspace(d.handle, workspace, bytes));
    d.stream = stream;
    d.bound = true;
    return d.handle;
  }

 private:
  struct PerDevice {
    cublasHandle_t handle = nullptr;
    cudaStream_t stream = nullptr;  // the stream it is bound to, once `bound`
    bool bound = false;
    std::map<cudaStream_t, void*> workspaces;
  };
  std::vector<PerDevice> devices_;
};

template <class T>
constexpr cudaDataType_t data_type() {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, bf16>, "storage type must be float or bf16");
  // trident::bf16 is bit-identical to __nv_bfloat16 (the upper half of an IEEE fp32)
  return std::is_same_v<T, float> ? CUDA_R_32F : CUDA_R_16BF;
}

template <class T, class TC>
cublasComputeType_t compute_type(Fp32Math math) {
  static_assert(std::is_same_v<T, TC> || (std::is_same_v<T, bf16> && std::is_same_v<TC, float>),
                "C is the storage type of A and B, or fp32 with bf16 A and B");
  constexpr bool all_fp32 = std::is_same_v<T, float> && std::is_same_v<TC, float>;
  return all_fp32 && math == Fp32Math::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

cublasOperation_t to_cublas(Trans t) { return t == Trans::yes ? CUBLAS_OP_T : CUBLAS_OP_N; }

template <class TC>
void scale(TC* C, int64_t M, int64_t N, int64_t ldc, int64_t stride_c, int64_t batch, float beta,
           cudaStream_t stream) {
  if (beta == 1.0f) return;
  TRIDENT_LAUNCH(elementwise_blocks(batch * M * N), kThreads, 0, stream, scale_kernel<TC>)(C, M, N, ldc, stride_c,
                                                                                      batch, beta);
  TRIDENT_CUDA_CHECK_LAUNCH();
}

}  // namespace

// ---- launchers ----------------------------------------------------------------------------------------------------

cublasHandle_t cublas_handle(cudaStream_t stream) {
  thread_local ThreadHandles handles;
  int device = 0;
  TRIDENT_CUDA_CHECK(cudaGetDevice(&device));
  return handles.bind(device, stream);
}

std::size_t cublas_workspace_bytes(int device) {
  int major = 0;
  TRIDENT_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  return static_cast<std::size_t>(major >= 9 ? 32 : 4) << 20;
}

// Row-major C (M x N, ldc) is column-major C^T (N x M, ldc), and likewise for A and B, so cuBLAS computes
// C^T = op(B)^T op(A)^T: first operand B with tb, second A with ta, m = N, n = M.
template <class T, class TC>
void gemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const T* A, int64_t lda, const T* B,
          int64_t ldb, float beta, TC* C, int64_t ldc, cudaStream_t stream, Fp32Math math) {
  if (M == 0 || N == 0) return;
  if (K == 0) return scale(C, M, N, ldc, 0, 1, beta, stream);
  TRIDENT_CUBLAS_CHECK(cublasGemmEx_64(cublas_handle(stream), to_cublas(tb), to_cublas(ta), N, M, K, &alpha, B,
                                       data_type<T>(), ldb, A, data_type<T>(), lda, &beta, C, data_type<TC>(), ldc,
                                       compute_type<T, TC>(math), CUBLAS_GEMM_DEFAULT));
}

template <class T, class TC>
void gemm_strided_batched(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const T* A, int64_t lda,
                          int64_t stride_a, const T* B, int64_t ldb, int64_t stride_b, float beta, TC* C, int64_t ldc,
                          int64_t stride_c, int64_t batch, cudaStream_t stream, Fp32Math math) {
  if (M == 0 || N == 0 || batch == 0) return;
  if (K == 0) return scale(C, M, N, ldc, stride_c, batch, beta, stream);
  TRIDENT_CUBLAS_CHECK(cublasGemmStridedBatchedEx_64(
      cublas_handle(stream), to_cublas(tb), to_cublas(ta), N, M, K, &alpha, B, data_type<T>(), ldb, stride_b, A,
      data_type<T>(), lda, stride_a, &beta, C, data_type<TC>(), ldc, stride_c, batch, compute_type<T, TC>(math),
      CUBLAS_GEMM_DEFAULT));
}

#define TRIDENT_INSTANTIATE_GEMM(T, TC)                                                                            \
  template void gemm<T, TC>(Trans, Trans, int64_t, int64_t, int64_t, float, const T*, int64_t, const T*, int64_t,  \
                            float, TC*, int64_t, cudaStream_t, Fp32Math);                                          \
  template void gemm_strided_batched<T, TC>(Trans, Trans, int64_t, int64_t, int64_t, float, const T*, int64_t,     \
                                            int64_t, const T*, int64_t, int64_t, float, TC*, int64_t, int64_t,     \
                                            int64_t, cudaStream_t, Fp32Math);
TRIDENT_INSTANTIATE_GEMM(float, float)
TRIDENT_INSTANTIATE_GEMM(bf16, bf16)
TRIDENT_INSTANTIATE_GEMM(bf16, float)
#undef TRIDENT_INSTANTIATE_GEMM

}  // namespace trident::cuda
