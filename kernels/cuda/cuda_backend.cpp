// CudaBackend: the Backend table over the CUDA kernels, every call on the backend's compute stream.
#include "kernels/cuda/cuda_backend.h"

#include <algorithm>

#include "kernels/cuda/adamw.h"
#include "kernels/cuda/attention_block.h"
#include "kernels/cuda/attention_linear.h"
#include "kernels/cuda/attention_softmax.h"
#include "kernels/common/error.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/copy_queue.h"
#include "kernels/cuda/crossentropy.h"
#include "kernels/cuda/decay_rows.h"
#include "kernels/cuda/embedding.h"
#include "kernels/cuda/feature_map.h"
#include "kernels/cuda/fill.h"
#include "kernels/cuda/gelu.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/grad_norm.h"
#include "kernels/cuda/layernorm.h"
#include "kernels/cuda/linear.h"
#include "kernels/cuda/memory.h"
#include "kernels/cuda/residual.h"
#include "kernels/cuda/rmsnorm.h"
#include "kernels/cuda/streams.h"
#include "kernels/cuda/strided_rows.h"

namespace trident::cuda {

namespace {

// Cross-entropy targets are checked on the host before the model uploads a batch (GPT::check_batch), so the LM
// head's chunks never wait for the device to report a bad one (kernels/cuda/crossentropy.h).
constexpr TargetCheck kTargets = TargetCheck::caller;

class CudaBackend final : public Backend {
 public:
  // The compute stream's cuBLAS handle and workspace are made now, not at the first GEMM: what lies outside the
  // memory budget is in place before the run checks that the budget fits (launch_scratch_bytes).
  explicit CudaBackend(int device) : device_(device), memory_(device, stream()) { cublas_handle(stream()); }

  const char* name() const override { return "cuda"; }
  MemoryResource& memory() override { return memory_; }

  void upload(void* dst, const void* host_src, std::size_t bytes) override {
    // Synchronous from the host's view (pageable memory): the caller may reuse its buffer on return.
    TRIDENT_CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, stream()));
    TRIDENT_CUDA_CHECK(cudaStreamSynchronize(stream()));
  }
  void download(void* host_dst, const void* src, std::size_t bytes) override {
    TRIDENT_CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, stream()));
    TRIDENT_CUDA_CHECK(cudaStreamSynchronize(stream()));
  }
  void fill(float* x, int64_t n, float value) override { cuda::fill(x, n, value, stream()); }
  void fill(bf16* x, int64_t n, float value) override { cuda::fill(x, n, value, stream()); }
  void convert(bf16* dst, const float* src, int64_t n) override { cuda::convert(dst, src, n, stream()); }
  void convert(float* dst, const bf16* src, int64_t n) override { cuda::convert(dst, src, n, stream()); }
  void synchronize() override { streams_.compute.synchronize(); }
  MemoryResource& staging_memory() override { return pinned_; }
  std::unique_ptr<CopyQueue> make_copy_queue() override { return cuda::make_copy_queue(device_, stream()); }

  void gemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
            const float* B, int64_t ldb, float beta, float* C, int64_t ldc) override {
    cuda::gemm<float>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream());
  }

  void embedding_forward(float* out, const int32_t* tokens, const int32_t* positions, const float* wte,
                         const float* wpe, int64_t N, int C) override {
    cuda::embedding_forward<float>(out, tokens, positions, wte, wpe, N, C, stream());
  }
  void embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                          const int32_t* positions, int64_t N, int C) override {
    cuda::embedding_backward<float>(dwte, dwpe, dout, tokens, positions, N, C, stream());
  }
  void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                         const float* bias, int64_t N, int C) override {
    cuda::layernorm_forward<float>(out, mean, rstd, inp, weight, bias, N, C, stream());
  }
  void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                          const float* weight, const float* mean, const float* rstd, int64_t N, int C) override {
    cuda::layernorm_backward<float>(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C, stream());
  }
  void linear_forward(float* out, const float* inp, const float* weight, const float* bias, int64_t N, int C,
                      int OC) override {
    cuda::linear_forward<float>(out, inp, weight, bias, N, C, OC, stream());
  }
  void linear_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                       const float* weight, int64_t N, int C, int OC) override {
    cuda::linear_backward<float>(dinp, dweight, dbias, dout, inp, weight, N, C, OC, stream());
  }
  void bias_gelu_forward(float* pre, float* out, const float* bias, int64_t N, int OC) override {
    cuda::bias_gelu_forward<float>(pre, out, bias, N, OC, stream());
  }
  void bias_gelu_backward(float* dpre, float* dbias, const float* pre, const float* dout, int64_t N,
                          int OC) override {
    cuda::bias_gelu_backward<float>(dpre, dbias, pre, dout, N, OC, stream());
  }
  void residual_forward(float* out, const float* a, const float* b, int64_t n) override {
    cuda::residual_forward<float>(out, a, b, n, stream());
  }
  void residual_backward(float* da, float* db, const float* dout, int64_t n) override {
    cuda::residual_backward<float>(da, db, dout, n, stream());
  }
  void rmsnorm_forward(float* out, float* rrms, const float* inp, const float* gate, int64_t rows, int D) override {
    cuda::rmsnorm_forward<float>(out, rrms, inp, gate, rows, D, stream());
  }
  void rmsnorm_backward(float* dinp, float* dgate, const float* dout, const float* inp, const float* gate,
                        const float* rrms, int64_t rows, int D) override {
    cuda::rmsnorm_backward<float>(dinp, dgate, dout, inp, gate, rrms, rows, D, stream());
  }
  void feature_map_forward(float* qkv, float* qk_pre, int64_t N, int C, FeatureMap map) override {
    cuda::feature_map_forward<float>(qkv, qk_pre, N, C, map, stream());
  }
  void feature_map_backward(float* dqkv, const float* qk_pre, int64_t N, int C, FeatureMap map) override {
    cuda::feature_map_backward<float>(dqkv, qk_pre, N, C, map, stream());
  }

  void attention_softmax_forward(float* out, float* lse, const float* qkv, const int32_t* cu_seqlens, int n_seq,
                                 int64_t N, int H, int D) override {
    cuda::attention_softmax_forward<float>(out, lse, qkv, cu_seqlens, n_seq, N, H, D, stream());
  }
  void attention_softmax_backward(float* dqkv, const float* dout, const float* qkv, const float* out,
                                  const float* lse, const int32_t* cu_seqlens, int n_seq, int64_t N, int H,
                                  int D) override {
    cuda::attention_softmax_backward<float>(dqkv, dout, qkv, out, lse, cu_seqlens, n_seq, N, H, D, stream());
  }
  void attention_linear_forward(float* out, float* state_out, const float* qkv, const float* slopes,
                                const float* state_in, const int32_t* cu_seqlens, int n_seq, int64_t N, int H, int D,
                                int chunk) override {
    cuda::attention_linear_forward<float>(out, state_out, qkv, slopes, state_in, cu_seqlens, n_seq, N, H, D, chunk,
                                          stream());
  }
  void attention_linear_backward(float* dqkv, float* dstate_in, const float* dout, const float* dstate_out,
                                 const float* qkv, const float* slopes, const float* state_in,
                                 const int32_t* cu_seqlens, int n_seq, int64_t N, int H, int D, int chunk) override {
    cuda::attention_linear_backward<float>(dqkv, dstate_in, dout, dstate_out, qkv, slopes, state_in, cu_seqlens,
                                           n_seq, N, H, D, chunk, stream());
  }

  void decay_rows(float* dst, const float* src, int64_t ld, int64_t n, int D, float s, int64_t offset,
                  int sign) override {
    cuda::decay_rows(dst, src, ld, n, D, s, offset, sign, stream());
  }
  void copy_rows(float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows,
                 int64_t cols) override {
    cuda::copy_rows(dst, ld_dst, src, ld_src, rows, cols, stream());
  }
  void add_rows(float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows,
                int64_t cols) override {
    cuda::add_rows(dst, ld_dst, src, ld_src, rows, cols, stream());
  }
  void copy_rows(bf16* dst, int64_t ld_dst, const bf16* src, int64_t ld_src, int64_t rows, int64_t cols) override {
    cuda::copy_rows(dst, ld_dst, src, ld_src, rows, cols, stream());
  }
  void add_rows(bf16* dst, int64_t ld_dst, const bf16* src, int64_t ld_src, int64_t rows, int64_t cols) override {
    cuda::add_rows(dst, ld_dst, src, ld_src, rows, cols, stream());
  }
  void attention_block_forward(float* m, float* l, float* acc, const float* q, int64_t ld_q, int64_t n,
                               int64_t q_pos0, const int64_t* doc_begin, const float* kv, int64_t n_k, int64_t k_pos0,
                               int H, int D) override {
    cuda::attention_block_forward(m, l, acc, q, ld_q, n, q_pos0, doc_begin, kv, n_k, k_pos0, H, D, stream());
  }
  void attention_block_finish(float* out, float* lse, const float* m, const float* l, const float* acc, int64_t n,
                              int H, int D) override {
    cuda::attention_block_finish(out, lse, m, l, acc, n, H, D, stream());
  }
  void attention_block_delta(float* delta, const float* out, const float* dout, int64_t n, int H, int D) override {
    cuda::attention_block_delta(delta, out, dout, n, H, D, stream());
  }
  void attention_block_backward(float* dq, int64_t ld_dq, float* dkv, const float* q, int64_t ld_q, int64_t n,
                                int64_t q_pos0, const int64_t* doc_begin, const float* dout, const float* lse,
                                const float* delta, const float* kv, int64_t n_k, int64_t k_pos0, int H,
                                int D) override {
    cuda::attention_block_backward(dq, ld_dq, dkv, q, ld_q, n, q_pos0, doc_begin, dout, lse, delta, kv, n_k, k_pos0,
                                   H, D, stream());
  }

  void crossentropy_forward(float* losses, const float* logits, const int32_t* targets, int64_t N,
                            int V) override {
    cuda::crossentropy_forward<float>(losses, logits, targets, N, V, stream(), kTargets);
  }
  void crossentropy_fused_backward(float* losses, float* logits_to_dlogits, const int32_t* targets,
                                   const float* weight, int64_t N, int V) override {
    cuda::crossentropy_fused_backward<float>(losses, logits_to_dlogits, targets, weight, N, V, stream(), kTargets);
  }

  // ---- bf16 storage: the same kernels instantiated for bf16 ----
  void gemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const bf16* A, int64_t lda,
            const bf16* B, int64_t ldb, float beta, bf16* C, int64_t ldc) override {
    cuda::gemm<bf16>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream());
  }
  void gemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const bf16* A, int64_t lda,
            const bf16* B, int64_t ldb, float beta, float* C, int64_t ldc) override {
    cuda::gemm<bf16, float>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream());
  }
  void embedding_forward(bf16* out, const int32_t* tokens, const int32_t* positions, const float* wte,
                         const float* wpe, int64_t N, int C) override {
    cuda::embedding_forward<bf16>(out, tokens, positions, wte, wpe, N, C, stream());
  }
  void embedding_backward(float* dwte, float* dwpe, const bf16* dout, const int32_t* tokens,
                          const int32_t* positions, int64_t N, int C) override {
    cuda::embedding_backward<bf16>(dwte, dwpe, dout, tokens, positions, N, C, stream());
  }
  void layernorm_forward(bf16* out, float* mean, float* rstd, const bf16* inp, const float* weight,
                         const float* bias, int64_t N, int C) override {
    cuda::layernorm_forward<bf16>(out, mean, rstd, inp, weight, bias, N, C, stream());
  }
  void layernorm_backward(bf16* dinp, float* dweight, float* dbias, const bf16* dout, const bf16* inp,
                          const float* weight, const float* mean, const float* rstd, int64_t N, int C) override {
    cuda::layernorm_backward<bf16>(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C, stream());
  }
  void linear_forward(bf16* out, const bf16* inp, const bf16* weight, const bf16* bias, int64_t N, int C,
                      int OC) override {
    cuda::linear_forward<bf16>(out, inp, weight, bias, N, C, OC, stream());
  }
  void linear_backward(bf16* dinp, float* dweight, float* dbias, const bf16* dout, const bf16* inp,
                       const bf16* weight, int64_t N, int C, int OC) override {
    cuda::linear_backward<bf16>(dinp, dweight, dbias, dout, inp, weight, N, C, OC, stream());
  }
  void bias_gelu_forward(bf16* pre, bf16* out, const bf16* bias, int64_t N, int OC) override {
    cuda::bias_gelu_forward<bf16>(pre, out, bias, N, OC, stream());
  }
  void bias_gelu_backward(bf16* dpre, float* dbias, const bf16* pre, const bf16* dout, int64_t N, int OC) override {
    cuda::bias_gelu_backward<bf16>(dpre, dbias, pre, dout, N, OC, stream());
  }
  void residual_forward(bf16* out, const bf16* a, const bf16* b, int64_t n) override {
    cuda::residual_forward<bf16>(out, a, b, n, stream());
  }
  void residual_backward(bf16* da, bf16* db, const bf16* dout, int64_t n) override {
    cuda::residual_backward<bf16>(da, db, dout, n, stream());
  }
  void rmsnorm_forward(bf16* out, float* rrms, const bf16* inp, const bf16* gate, int64_t rows, int D) override {
    cuda::rmsnorm_forward<bf16>(out, rrms, inp, gate, rows, D, stream());
  }
  void rmsnorm_backward(bf16* dinp, bf16* dgate, const bf16* dout, const bf16* inp, const bf16* gate,
                        const float* rrms, int64_t rows, int D) override {
    cuda::rmsnorm_backward<bf16>(dinp, dgate, dout, inp, gate, rrms, rows, D, stream());
  }
  void feature_map_forward(bf16* qkv, bf16* qk_pre, int64_t N, int C, FeatureMap map) override {
    cuda::feature_map_forward<bf16>(qkv, qk_pre, N, C, map, stream());
  }
  void feature_map_backward(bf16* dqkv, const bf16* qk_pre, int64_t N, int C, FeatureMap map) override {
    cuda::feature_map_backward<bf16>(dqkv, qk_pre, N, C, map, stream());
  }
  void attention_softmax_forward(bf16* out, float* lse, const bf16* qkv, const int32_t* cu_seqlens, int n_seq,
                                 int64_t N, int H, int D) override {
    cuda::attention_softmax_forward<bf16>(out, lse, qkv, cu_seqlens, n_seq, N, H, D, stream());
  }
  void attention_softmax_backward(bf16* dqkv, const bf16* dout, const bf16* qkv, const bf16* out, const float* lse,
                                  const int32_t* cu_seqlens, int n_seq, int64_t N, int H, int D) override {
    cuda::attention_softmax_backward<bf16>(dqkv, dout, qkv, out, lse, cu_seqlens, n_seq, N, H, D, stream());
  }
  void attention_linear_forward(bf16* out, float* state_out, const bf16* qkv, const float* slopes,
                                const float* state_in, const int32_t* cu_seqlens, int n_seq, int64_t N, int H, int D,
                                int chunk) override {
    cuda::attention_linear_forward<bf16>(out, state_out, qkv, slopes, state_in, cu_seqlens, n_seq, N, H, D, chunk,
                                         stream());
  }
  void attention_linear_backward(bf16* dqkv, float* dstate_in, const bf16* dout, const float* dstate_out,
                                 const bf16* qkv, const float* slopes, const float* state_in,
                                 const int32_t* cu_seqlens, int n_seq, int64_t N, int H, int D, int chunk) override {
    cuda::attention_linear_backward<bf16>(dqkv, dstate_in, dout, dstate_out, qkv, slopes, state_in, cu_seqlens,
                                          n_seq, N, H, D, chunk, stream());
  }
  void crossentropy_forward(float* losses, const bf16* logits, const int32_t* targets, int64_t N, int V) override {
    cuda::crossentropy_forward<bf16>(losses, logits, targets, N, V, stream(), kTargets);
  }
  void crossentropy_fused_backward(float* losses, bf16* logits_to_dlogits, const int32_t* targets,
                                   const float* weight, int64_t N, int V) override {
    cuda::crossentropy_fused_backward<bf16>(losses, logits_to_dlogits, targets, weight, N, V, stream(),
                                           kTargets);
  }

  void adamw_update(float* params, const float* grads, float* m, float* v, int64_t n, const AdamWStep& step,
                    float grad_scale) override {
    cuda::adamw_update(params, grads, m, v, n, step, grad_scale, stream());
  }
  double squared_norm(const float* x, int64_t n) override { return cuda::squared_norm(x, n, stream()); }
  void scale(float* x, int64_t n, float s) override { cuda::scale(x, n, s, stream()); }

  cudaStream_t stream() const { return streams_.compute.get(); }

 private:

  int device_;
  DeviceStreams streams_;  // before memory_: the pool orders its frees on the compute stream
  DeviceMemory memory_;
  PinnedHostMemory pinned_;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(int device) {
  TRIDENT_CUDA_CHECK(cudaSetDevice(device));
  return std::make_unique<CudaBackend>(device);
}

std::size_t launch_scratch_bytes(int64_t tokens, int channels, int widest_bias, int64_t params) {
  return std::max({bias_grad_scratch_bytes(tokens, widest_bias), layernorm_backward_scratch_bytes(tokens, channels),
                   embedding_backward_scratch_bytes(tokens), squared_norm_scratch_bytes(params)});
}

cudaStream_t compute_stream(Backend& backend) {
  auto* cuda = dynamic_cast<CudaBackend*>(&backend);
  TRIDENT_CHECK(cuda != nullptr, "compute_stream: backend '{}' is not the CUDA backend", backend.name());
  return cuda->stream();
}

}  // namespace trident::cuda
