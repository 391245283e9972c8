#pragma once
// The one contract between the model and the compute: every op the model, the optimizer and the trainer run, with
// the argument order and meaning of the CPU kernels (kernels/cpu/*.h, which document layouts; kernels/README.md has
// the conventions: row-major, packed sequences with cu_seqlens, backward ops accumulate). Pointers are in the
// backend's memory (memory()): host memory for cpu, device memory for cuda. Ops are ordered as called; the ones that
// return a value to the host (squared_norm, download) wait for what came before.
//
// bf16: every op whose activations may be stored in bf16 (train.precision: bf16) has a second overload taking
// bf16 pointers for them, with the same meaning; the arithmetic stays fp32 and norms' statistics, lse, states, slopes,
// losses, parameters and parameter gradients stay fp32 (the storage rules of kernels/cuda/*.h). The CUDA backend runs
// the bf16 kernels; the CPU backend emulates them (kernels/cpu/bf16_emulation.h: inputs widened to fp32, the fp32
// kernel, outputs rounded to bf16), so the bf16 model is testable everywhere.
//
// Implementations: CpuBackend (kernels/cpu/cpu_backend.cpp, OpenBLAS + OpenMP) and CudaBackend
// (kernels/cuda/cuda_backend.cpp, cuBLAS + the .cu kernels on one compute stream); backend_for() in
// kernels/backends.h picks one. Being an abstract class, a backend that lacks an op does not compile: the table is
// complete by construction.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/common/memory_resource.h"
#include "kernels/copy_queue.h"
#include "kernels/shared/adamw.h"
#include "kernels/shared/bf16.h"
#include "kernels/shared/feature_map.h"
#include "kernels/shared/trans.h"

namespace trident {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;  // "cpu", "cuda"
  virtual MemoryResource& memory() = 0;  // where tensors the ops take live
  Device device() { return memory().device(); }

  // ---- memory: host buffers to and from the backend's, and fills ----
  virtual void upload(void* dst, const void* host_src, std::size_t bytes) = 0;
  virtual void download(void* host_dst, const void* src, std::size_t bytes) = 0;  // complete on return
  virtual void fill(float* x, int64_t n, float value) = 0;
  virtual void fill(bf16* x, int64_t n, float value) = 0;
  // dst = src rounded to bf16 (the bf16 copy of the fp32 master weights).
  virtual void convert(bf16* dst, const float* src, int64_t n) = 0;
  // dst = src widened to fp32 (exact): bf16 activations entering an fp32 sequence-parallel op.
  virtual void convert(float* dst, const bf16* src, int64_t n) = 0;
  virtual void synchronize() = 0;
  // Host memory the backend copies to and from asynchronously: page-locked on cuda, plain on cpu (ATOM's host store).
  virtual MemoryResource& staging_memory() = 0;
  // A queue of copies beside the compute (kernels/copy_queue.h).
  virtual std::unique_ptr<CopyQueue> make_copy_queue() = 0;

  // ---- GEMM (kernels/cpu/gemm.h) ----
  virtual void gemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                    const float* B, int64_t ldb, float beta, float* C, int64_t ldc) = 0;
  virtual void gemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const bf16* A, int64_t lda,
                    const bf16* B, int64_t ldb, float beta, bf16* C, int64_t ldc) = 0;
  // bf16 operands, fp32 result: parameter gradients (dweight += inp^T @ dout) and logits read back to the host.
  virtual void gemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const bf16* A, int64_t lda,
                    const bf16* B, int64_t ldb, float beta, float* C, int64_t ldc) = 0;

  // ---- layers (kernels/cpu/<op>.h), forward above backward; fp32 then bf16 activations ----
  virtual void embedding_forward(float* out, const int32_t* tokens, const int32_t* positions, const float* wte,
                                 const float* wpe, int64_t N, int C) = 0;
  virtual void embedding_forward(bf16* out, const int32_t* tokens, const int32_t* positions, const float* wte,
                                 const float* wpe, int64_t N, int C) = 0;
  virtual void embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                                  const int32_t* positions, int64_t N, int C) = 0;
  virtual void embedding_backward(float* dwte, float* dwpe, const bf16* dout, const int32_t* tokens,
                                  const int32_t* positions, int64_t N, int C) = 0;
  virtual void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                                 const float* bias, int64_t N, int C) = 0;
  virtual void layernorm_forward(bf16* out, float* mean, float* rstd, const bf16* inp, const float* weight,
                                 const float* bias, int64_t N, int C) = 0;
  virtual void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                                  const float* weight, const float* mean, const float* rstd, int64_t N, int C) = 0;
  virtual void layernorm_backward(bf16* dinp, float* dweight, float* dbias, const bf16* dout, const bf16* inp,
                                  const float* weight, const float* mean, const float* rstd, int64_t N, int C) = 0;
  virtual void linear_forward(float* out, const float* inp, const float* weight, const float* bias, int64_t N, int C,
                              int OC) = 0;
  virtual void linear_forward(bf16* out, const bf16* inp, const bf16* weight, const bf16* bias, int64_t N, int C,
                              int OC) = 0;
  virtual void linear_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                               const float* weight, int64_t N, int C, int OC) = 0;
  virtual void linear_backward(bf16* dinp, float* dweight, float* dbias, const bf16* dout, const bf16* inp,
                               const bf16* weight, int64_t N, int C, int OC) = 0;
  // The MLP's bias and GELU in one pass (kernels/cpu/gelu.h): pre += bias, out = gelu(pre as stored); backward
  // overwrites dpre and adds dpre's column sums (taken in fp32, before any rounding to bf16) to dbias.
  virtual void bias_gelu_forward(float* pre, float* out, const float* bias, int64_t N, int OC) = 0;
  virtual void bias_gelu_forward(bf16* pre, bf16* out, const bf16* bias, int64_t N, int OC) = 0;
  virtual void bias_gelu_backward(float* dpre, float* dbias, const float* pre, const float* dout, int64_t N,
                                  int OC) = 0;
  virtual void bias_gelu_backward(bf16* dpre, float* dbias, const bf16* pre, const bf16* dout, int64_t N,
                                  int OC) = 0;
  virtual void residual_forward(float* out, const float* a, const float* b, int64_t n) = 0;
  virtual void residual_forward(bf16* out, const bf16* a, const bf16* b, int64_t n) = 0;
  virtual void residual_backward(float* da, float* db, const float* dout, int64_t n) = 0;
  virtual void residual_backward(bf16* da, bf16* db, const bf16* dout, int64_t n) = 0;
  // Optionally gated (gate nullptr: none; dgate is then ignored): linear attention's output norm and gate.
  virtual void rmsnorm_forward(float* out, float* rrms, const float* inp, const float* gate, int64_t rows,
                               int D) = 0;
  virtual void rmsnorm_forward(bf16* out, float* rrms, const bf16* inp, const bf16* gate, int64_t rows, int D) = 0;
  virtual void rmsnorm_backward(float* dinp, float* dgate, const float* dout, const float* inp, const float* gate,
                                const float* rrms, int64_t rows, int D) = 0;
  virtual void rmsnorm_backward(bf16* dinp, bf16* dgate, const bf16* dout, const bf16* inp, const bf16* gate,
                                const float* rrms, int64_t rows, int D) = 0;
  // Linear attention's q/k feature map, in place on qkv (kernels/cpu/feature_map.h; backward rescales, it does not
  // accumulate).
  virtual void feature_map_forward(float* qkv, float* qk_pre, int64_t N, int C, FeatureMap map) = 0;
  virtual void feature_map_forward(bf16* qkv, bf16* qk_pre, int64_t N, int C, FeatureMap map) = 0;
  virtual void feature_map_backward(float* dqkv, const float* qk_pre, int64_t N, int C, FeatureMap map) = 0;
  virtual void feature_map_backward(bf16* dqkv, const bf16* qk_pre, int64_t N, int C, FeatureMap map) = 0;

  // ---- attention (kernels/cpu/attention_softmax.h, attention_linear.h) ----
  virtual void attention_softmax_forward(float* out, float* lse, const float* qkv, const int32_t* cu_seqlens,
                                         int n_seq, int64_t N, int H, int D) = 0;
  virtual void attention_softmax_forward(bf16* out, float* lse, const bf16* qkv, const int32_t* cu_seqlens,
                                         int n_seq, int64_t N, int H, int D) = 0;
  virtual void attention_softmax_backward(float* dqkv, const float* dout, const float* qkv, const float* out,
                                          const float* lse, const int32_t* cu_seqlens, int n_seq, int64_t N, int H,
                                          int D) = 0;
  virtual void attention_softmax_backward(bf16* dqkv, const bf16* dout, const bf16* qkv, const bf16* out,
                                          const float* lse, const int32_t* cu_seqlens, int n_seq, int64_t N, int H,
                                          int D) = 0;
  virtual void attention_linear_forward(float* out, float* state_out, const float* qkv, const float* slopes,
                                        const float* state_in, const int32_t* cu_seqlens, int n_seq, int64_t N,
                                        int H, int D, int chunk) = 0;
  virtual void attention_linear_forward(bf16* out, float* state_out, const bf16* qkv, const float* slopes,
                                        const float* state_in, const int32_t* cu_seqlens, int n_seq, int64_t N,
                                        int H, int D, int chunk) = 0;
  virtual void attention_linear_backward(float* dqkv, float* dstate_in, const float* dout, const float* dstate_out,
                                         const float* qkv, const float* slopes, const float* state_in,
                                         const int32_t* cu_seqlens, int n_seq, int64_t N, int H, int D,
                                         int chunk) = 0;
  virtual void attention_linear_backward(bf16* dqkv, float* dstate_in, const bf16* dout, const float* dstate_out,
                                         const bf16* qkv, const float* slopes, const float* state_in,
                                         const int32_t* cu_seqlens, int n_seq, int64_t N, int H, int D,
                                         int chunk) = 0;

  // ---- sequence parallelism (kernels/cpu/decay_rows.h): a neighbour's state folded into a rank's rows ----
  virtual void decay_rows(float* dst, const float* src, int64_t ld, int64_t n, int D, float s, int64_t offset,
                          int sign) = 0;
  // Row blocks packed into messages and unpacked from them (kernels/cpu/strided_rows.h).
  virtual void copy_rows(float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows,
                         int64_t cols) = 0;
  virtual void copy_rows(bf16* dst, int64_t ld_dst, const bf16* src, int64_t ld_src, int64_t rows,
                         int64_t cols) = 0;
  virtual void add_rows(float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows,
                        int64_t cols) = 0;
  virtual void add_rows(bf16* dst, int64_t ld_dst, const bf16* src, int64_t ld_src, int64_t rows,
                        int64_t cols) = 0;
  // Ring Attention's block math (kernels/cpu/attention_block.h): queries against one block of keys and values,
  // masked by global position, merged by online softmax. fp32; doc_begin is in the backend's memory.
  virtual void attention_block_forward(float* m, float* l, float* acc, const float* q, int64_t ld_q, int64_t n,
                                       int64_t q_pos0, const int64_t* doc_begin, const float* kv, int64_t n_k,
                                       int64_t k_pos0, int H, int D) = 0;
  virtual void attention_block_finish(float* out, float* lse, const float* m, const float* l, const float* acc,
                                      int64_t n, int H, int D) = 0;
  virtual void attention_block_delta(float* delta, const float* out, const float* dout, int64_t n, int H, int D) = 0;
  virtual void attention_block_backward(float* dq, int64_t ld_dq, float* dkv, const float* q, int64_t ld_q, int64_t n,
                                        int64_t q_pos0, const int64_t* doc_begin, const float* dout,
                                        const float* lse, const float* delta, const float* kv, int64_t n_k,
                                        int64_t k_pos0, int H, int D) = 0;

  // ---- loss (kernels/cpu/crossentropy.h). A target outside [0, V) other than -1 is the caller's to reject (the
  // model does, on the host): the CPU backend throws, the CUDA backend gives that row a NaN loss. ----
  virtual void crossentropy_forward(float* losses, const float* logits, const int32_t* targets, int64_t N,
                                    int V) = 0;
  virtual void crossentropy_forward(float* losses, const bf16* logits, const int32_t* targets, int64_t N,
                                    int V) = 0;
  virtual void crossentropy_fused_backward(float* losses, float* logits_to_dlogits, const int32_t* targets,
                                           const float* weight, int64_t N, int V) = 0;
  virtual void crossentropy_fused_backward(float* losses, bf16* logits_to_dlogits, const int32_t* targets,
                                           const float* weight, int64_t N, int V) = 0;

  // ---- optimizer (kernels/cpu/adamw.h, grad_norm.h) ----
  virtual void adamw_update(float* params, const float* grads, float* m, float* v, int64_t n, const AdamWStep& step,
                            float grad_scale) = 0;
  virtual double squared_norm(const float* x, int64_t n) = 0;  // returns to the host
  virtual void scale(float* x, int64_t n, float s) = 0;
};

// The CPU backend (one per process; it holds no state).
Backend& cpu_backend();

// n floats in a backend's memory, readable on the host: the buffer itself on the CPU (no copy), a downloaded copy
// otherwise. What checkpoints and weight files are written from.
class HostFloats {
 public:
  HostFloats(Backend& backend, const float* x, int64_t n) : data_(x) {
    if (backend.device() == Device::cpu) return;
    copy_.resize(static_cast<std::size_t>(n));
    backend.download(copy_.data(), x, sizeof(float) * static_cast<std::size_t>(n));
    data_ = copy_.data();
  }
  const float* data() const { return data_; }

 private:
  const float* data_;
  std::vector<float> copy_;
};

// A growable array of T in a backend's memory, with copies to and from the host: small per-op buffers (sequence
// parallelism's states and scratch) that stay outside the device budget. On the CPU it is plain host memory, so
// code written against it runs, and is tested, the same way on every backend.
template <class T>
class BackendArray {
 public:
  explicit BackendArray(Backend& backend) : backend_(&backend) {}
  ~BackendArray() {
    if (data_ != nullptr) backend_->memory().release(data_);
  }
  BackendArray(const BackendArray&) = delete;
  BackendArray& operator=(const BackendArray&) = delete;

  // At least n elements (contents undefined after growing).
  T* data(int64_t n) {
    if (n > capacity_) {
      if (data_ != nullptr) backend_->memory().release(data_);
      data_ = static_cast<T*>(backend_->memory().allocate(sizeof(T) * static_cast<std::size_t>(n)));
      capacity_ = n;
    }
    return data_;
  }
  const T* data() const { return data_; }
  // The first n elements := host[0, n); returns the array.
  T* upload(const T* host, int64_t n) {
    T* d = data(n);
    backend_->upload(d, host, sizeof(T) * static_cast<std::size_t>(n));
    return d;
  }
  void download(T* host, int64_t n) const {
    backend_->download(host, data_, sizeof(T) * static_cast<std::size_t>(n));
  }

 private:
  Backend* backend_;
  T* data_ = nullptr;
  int64_t capacity_ = 0;
};

}  // namespace trident
