// The CPU backend: the Backend table over the kernels of this folder. Host memory, nothing to wait for. The bf16
// overloads emulate bf16 storage around the fp32 kernels (kernels/cpu/bf16_emulation.h).
#include <algorithm>
#include <cstring>

#include "kernels/backend.h"
#include "kernels/cpu/adamw.h"
#include "kernels/cpu/attention_block.h"
#include "kernels/cpu/attention_linear.h"
#include "kernels/cpu/bf16_emulation.h"
#include "kernels/cpu/copy_queue.h"
#include "kernels/cpu/attention_softmax.h"
#include "kernels/cpu/crossentropy.h"
#include "kernels/cpu/decay_rows.h"
#include "kernels/cpu/strided_rows.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/feature_map.h"
#include "kernels/cpu/gelu.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/grad_norm.h"
#include "kernels/cpu/layernorm.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/residual.h"
#include "kernels/cpu/rmsnorm.h"

namespace trident {

namespace {

using cpu::Narrowed;
using cpu::Widened;
using cpu::matrix_extent;

class CpuBackend final : public Backend {
 public:
  const char* name() const override { return "cpu"; }
  MemoryResource& memory() override { return host_memory(); }

  // memcpy's pointers must not be null even for 0 bytes, and an empty array's may be.
  void upload(void* dst, const void* host_src, std::size_t bytes) override {
    if (bytes > 0) std::memcpy(dst, host_src, bytes);
  }
  void download(void* host_dst, const void* src, std::size_t bytes) override {
    if (bytes > 0) std::memcpy(host_dst, src, bytes);
  }
  void fill(float* x, int64_t n, float value) override { std::fill(x, x + n, value); }
  void fill(bf16* x, int64_t n, float value) override { std::fill(x, x + n, float_to_bf16(value)); }
  void convert(bf16* dst, const float* src, int64_t n) override {
    for (int64_t i = 0; i < n; ++i) dst[i] = float_to_bf16(src[i]);
  }
  void convert(float* dst, const bf16* src, int64_t n) override {
    for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_float(src[i]);
  }
  void synchronize() override {}
  MemoryResource& staging_memory() override { return host_memory(); }
  std::unique_ptr<CopyQueue> make_copy_queue() override { return cpu::make_copy_queue(); }

  void gemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
            const float* B, int64_t ldb, float beta, float* C, int64_t ldc) override {
    cpu::gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }

  void embedding_forward(float* out, const int32_t* tokens, const int32_t* positions, const float* wte,
                         const float* wpe, int64_t N, int C) override {
    cpu::embedding_forward(out, tokens, positions, wte, wpe, N, C);
  }
  void embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                          const int32_t* positions, int64_t N, int C) override {
    cpu::embedding_backward(dwte, dwpe, dout, tokens, positions, N, C);
  }
  void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                         const float* bias, int64_t N, int C) override {
    cpu::layernorm_forward(out, mean, rstd, inp, weight, bias, N, C);
  }
  void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                          const float* weight, const float* mean, const float* rstd, int64_t N, int C) override {
    cpu::layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
  }
  void linear_forward(float* out, const float* inp, const float* weight, const float* bias, int64_t N, int C,
                      int OC) override {
    cpu::linear_forward(out, inp, weight, bias, N, C, OC);
  }
  void linear_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                       const float* weight, int64_t N, int C, int OC) override {
    cpu::linear_backward(dinp, dweight, dbias, dout, inp, weight, N, C, OC);
  }
  void bias_gelu_forward(float* pre, float* out, const float* bias, int64_t N, int OC) override {
    cpu::bias_gelu_forward(pre, out, bias, N, OC);
  }
  void bias_gelu_backward(float* dpre, float* dbias, const float* pre, const float* dout, int64_t N,
                          int OC) override {
    cpu::bias_gelu_backward(dpre, dbias, pre, dout, N, OC);
  }
  void residual_forward(float* out, const float* a, const float* b, int64_t n) override {
    cpu::residual_forward(out, a, b, n);
  }
  void residual_backward(float* da, float* db, const float* dout, int64_t n) override {
    cpu::residual_backward(da, db, dout, n);
  }
  void rmsnorm_forward(float* out, float* rrms, const float* inp, const float* gate, int64_t rows, int D) override {
    cpu::rmsnorm_forward(out, rrms, inp, gate, rows, D);
  }
  void rmsnorm_backward(float* dinp, float* dgate, const float* dout, const float* inp, const float* gate,
                        const float* rrms, int64_t rows, int D) override {
    cpu::rmsnorm_backward(dinp, dgate, dout, inp, gate, rrms, rows, D);
  }
  void feature_map_forward(float* qkv, float* qk_pre, int64_t N, int C, FeatureMap map) override {
    cpu::feature_map_forward(qkv, qk_pre, N, C, map);
  }
  void feature_map_backward(float* dqkv, const float* qk_pre, int64_t N, int C, FeatureMap map) override {
    cpu::feature_map_backward(dqkv, qk_pre, N, C, map);
  }

  void attention_softmax_forward(float* out, float* lse, const float* qkv, const int32_t* cu_seqlens, int n_seq,
                                 int64_t N, int H, int D) override {
    cpu::attention_softmax_forward(out, lse, qkv, cu_seqlens, n_seq, N, H, D);
  }
  void attention_softmax_backward(float* dqkv, const float* dout, const float* qkv, const float* out,
                                  const float* lse, const int32_t* cu_seqlens, int n_seq, int64_t N, int H,
                                  int D) override {
    cpu::attention_softmax_backward(dqkv, dout, qkv, out, lse, cu_seqlens, n_seq, N, H, D);
  }
  void attention_linear_forward(float* out, float* state_out, const float* qkv, const float* slopes,
                                const float* state_in, const int32_t* cu_seqlens, int n_seq, int64_t N, int H, int D,
                                int chunk) override {
    cpu::attention_linear_forward(out, state_out, qkv, slopes, state_in, cu_seqlens, n_seq, N, H, D, chunk);
  }
  void attention_linear_backward(float* dqkv, float* dstate_in, const float* dout, const float* dstate_out,
                                 const float* qkv, const float* slopes, const float* state_in,
                                 const int32_t* cu_seqlens, int n_seq, int64_t N, int H, int D, int chunk) override {
    cpu::attention_linear_backward(dqkv, dstate_in, dout, dstate_out, qkv, slopes, state_in, cu_seqlens, n_seq, N, H,
                                   D, chunk);
  }

  void decay_rows(float* dst, const float* src, int64_t ld, int64_t n, int D, float s, int64_t offset,
                  int sign) override {
    cpu::decay_rows(dst, src, ld, n, D, s, offset, sign);
  }
  void copy_rows(float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows,
                 int64_t cols) override {
    cpu::copy_rows(dst, ld_dst, src, ld_src, rows, cols);
  }
  void add_rows(float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows,
                int64_t cols) override {
    cpu::add_rows(dst, ld_dst, src, ld_src, rows, cols);
  }
  void copy_rows(bf16* dst, int64_t ld_dst, const bf16* src, int64_t ld_src, int64_t rows, int64_t cols) override {
    cpu::copy_rows(dst, ld_dst, src, ld_src, rows, cols);
  }
  void add_rows(bf16* dst, int64_t ld_dst, const bf16* src, int64_t ld_src, int64_t rows, int64_t cols) override {
    cpu::add_rows(dst, ld_dst, src, ld_src, rows, cols);
  }
  void attention_block_forward(float* m, float* l, float* acc, const float* q, int64_t ld_q, int64_t n,
                               int64_t q_pos0, const int64_t* doc_begin, const float* kv, int64_t n_k, int64_t k_pos0,
                               int H, int D) override {
    cpu::attention_block_forward(m, l, acc, q, ld_q, n, q_pos0, doc_begin, kv, n_k, k_pos0, H, D);
  }
  void attention_block_finish(float* out, float* lse, const float* m, const float* l, const float* acc, int64_t n,
                              int H, int D) override {
    cpu::attention_block_finish(out, lse, m, l, acc, n, H, D);
  }
  void attention_block_delta(float* delta, const float* out, const float* dout, int64_t n, int H, int D) override {
    cpu::attention_block_delta(delta, out, dout, n, H, D);
  }
  void attention_block_backward(float* dq, int64_t ld_dq, float* dkv, const float* q, int64_t ld_q, int64_t n,
                                int64_t q_pos0, const int64_t* doc_begin, const float* dout, const float* lse,
                                const float* delta, const float* kv, int64_t n_k, int64_t k_pos0, int H,
                                int D) override {
    cpu::attention_block_backward(dq, ld_dq, dkv, q, ld_q, n, q_pos0, doc_begin, dout, lse, delta, kv, n_k, k_pos0, H,
                                  D);
  }

  void crossentropy_forward(float* losses, const float* logits, const int32_t* targets, int64_t N,
                            int V) override {
    cpu::crossentropy_forward(losses, logits, targets, N, V);
  }
  void crossentropy_fused_backward(float* losses, float* logits_to_dlogits, const int32_t* targets,
                                   const float* weight, int64_t N, int V) override {
    cpu::crossentropy_fused_backward(losses, logits_to_dlogits, targets, weight, N, V);
  }

  // ---- bf16 storage, emulated: widen the inputs, run the fp32 kernel, round the outputs ----
  void gemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const bf16* A, int64_t lda,
            const bf16* B, int64_t ldb, float beta, bf16* C, int64_t ldc) override {
    // Loaded even when beta == 0: the elements between rows (ldc > N) are written back and must keep their values.
    Narrowed c(C, matrix_extent(M, N, ldc), Narrowed::accumulate);
    gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, static_cast<float*>(c), ldc);
  }
  void gemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const bf16* A, int64_t lda,
            const bf16* B, int64_t ldb, float beta, float* C, int64_t ldc) override {
    const bool a_plain = ta == Trans::no, b_plain = tb == Trans::no;
    const Widened a(A, matrix_extent(a_plain ? M : K, a_plain ? K : M, lda));
    const Widened b(B, matrix_extent(b_plain ? K : N, b_plain ? N : K, ldb));
    cpu::gemm(ta, tb, M, N, K, alpha, a, lda, b, ldb, beta, C, ldc);
  }
  void embedding_forward(bf16* out, const int32_t* tokens, const int32_t* positions, const float* wte,
                         const float* wpe, int64_t N, int C) override {
    Narrowed o(out, N * C, Narrowed::overwrite);
    cpu::embedding_forward(o, tokens, positions, wte, wpe, N, C);
  }
  void embedding_backward(float* dwte, float* dwpe, const bf16* dout, const int32_t* tokens,
                          const int32_t* positions, int64_t N, int C) override {
    cpu::embedding_backward(dwte, dwpe, Widened(dout, N * C), tokens, positions, N, C);
  }
  void layernorm_forward(bf16* out, float* mean, float* rstd, const bf16* inp, const float* weight,
                         const float* bias, int64_t N, int C) override {
    Narrowed o(out, N * C, Narrowed::overwrite);
    cpu::layernorm_forward(o, mean, rstd, Widened(inp, N * C), weight, bias, N, C);
  }
  void layernorm_backward(bf16* dinp, float* dweight, float* dbias, const bf16* dout, const bf16* inp,
                          const float* weight, const float* mean, const float* rstd, int64_t N, int C) override {
    Narrowed di(dinp, N * C, Narrowed::accumulate);
    cpu::layernorm_backward(di, dweight, dbias, Widened(dout, N * C), Widened(inp, N * C), weight, mean, rstd, N, C);
  }
  void linear_forward(bf16* out, const bf16* inp, const bf16* weight, const bf16* bias, int64_t N, int C,
                      int OC) override {
    Narrowed o(out, N * OC, Narrowed::overwrite);
    cpu::linear_forward(o, Widened(inp, N * C), Widened(weight, int64_t{C} * OC), Widened(bias, OC), N, C, OC);
  }
  void linear_backward(bf16* dinp, float* dweight, float* dbias, const bf16* dout, const bf16* inp,
                       const bf16* weight, int64_t N, int C, int OC) override {
    Narrowed di(dinp, N * C, Narrowed::accumulate);
    cpu::linear_backward(di, dweight, dbias, Widened(dout, N * OC), Widened(inp, N * C),
                         Widened(weight, int64_t{C} * OC), N, C, OC);
  }
  void bias_gelu_forward(bf16* pre, bf16* out, const bf16* bias, int64_t N, int OC) override {
    if (bias != nullptr) {  // pre is stored in bf16 before the activation reads it, as the CUDA kernel does
      const Widened wb(bias, OC);
      for (int64_t i = 0; i < N * OC; ++i) pre[i] = float_to_bf16(bf16_to_float(pre[i]) + wb[i % OC]);
    }
    Narrowed p(pre, N * OC, Narrowed::accumulate);  // bf16 values: written back unchanged
    Narrowed o(out, N * OC, Narrowed::overwrite);
    cpu::bias_gelu_forward(p, o, nullptr, N, OC);
  }
  void bias_gelu_backward(bf16* dpre, float* dbias, const bf16* pre, const bf16* dout, int64_t N,
                          int OC) override {
    Narrowed d(dpre, N * OC, Narrowed::overwrite);
    cpu::bias_gelu_backward(d, dbias, Widened(pre, N * OC), Widened(dout, N * OC), N, OC);
  }
  void residual_forward(bf16* out, const bf16* a, const bf16* b, int64_t n) override {
    const Widened wa(a, n), wb(b, n);  // widened before `out` (which may alias them) is written
    Narrowed o(out, n, Narrowed::overwrite);
    cpu::residual_forward(o, wa, wb, n);
  }
  void residual_backward(bf16* da, bf16* db, const bf16* dout, int64_t n) override {
    Narrowed a(da, n, Narrowed::accumulate), b(db, n, Narrowed::accumulate);
    cpu::residual_backward(a, b, Widened(dout, n), n);
  }
  void rmsnorm_forward(bf16* out, float* rrms, const bf16* inp, const bf16* gate, int64_t rows, int D) override {
    Narrowed o(out, rows * D, Narrowed::overwrite);
    cpu::rmsnorm_forward(o, rrms, Widened(inp, rows * D), Widened(gate, rows * D), rows, D);
  }
  void rmsnorm_backward(bf16* dinp, bf16* dgate, const bf16* dout, const bf16* inp, const bf16* gate,
                        const float* rrms, int64_t rows, int D) override {
    Narrowed di(dinp, rows * D, Narrowed::accumulate);
    Narrowed dg(gate == nullptr ? nullptr : dgate, rows * D, Narrowed::accumulate);
    cpu::rmsnorm_backward(di, dg, Widened(dout, rows * D), Widened(inp, rows * D), Widened(gate, rows * D), rrms,
                          rows, D);
  }
  void feature_map_forward(bf16* qkv, bf16* qk_pre, int64_t N, int C, FeatureMap map) override {
    Narrowed q(qkv, 3 * N * C, Narrowed::accumulate);  // v passes through unchanged (widened, rounded: exact)
    Narrowed pre(qk_pre, 2 * N * C, Narrowed::overwrite);
    cpu::feature_map_forward(q, pre, N, C, map);
  }
  void feature_map_backward(bf16* dqkv, const bf16* qk_pre, int64_t N, int C, FeatureMap map) override {
    Narrowed d(dqkv, 3 * N * C, Narrowed::accumulate);
    cpu::feature_map_backward(d, Widened(qk_pre, 2 * N * C), N, C, map);
  }
  void attention_softmax_forward(bf16* out, float* lse, const bf16* qkv, const int32_t* cu_seqlens, int n_seq,
                                 int64_t N, int H, int D) override {
    const int64_t C = int64_t{H} * D;
    Narrowed o(out, N * C, Narrowed::overwrite);
    cpu::attention_softmax_forward(o, lse, Widened(qkv, 3 * N * C), cu_seqlens, n_seq, N, H, D);
  }
  void attention_softmax_backward(bf16* dqkv, const bf16* dout, const bf16* qkv, const bf16* out, const float* lse,
                                  const int32_t* cu_seqlens, int n_seq, int64_t N, int H, int D) override {
    const int64_t C = int64_t{H} * D;
    Narrowed d(dqkv, 3 * N * C, Narrowed::accumulate);
    cpu::attention_softmax_backward(d, Widened(dout, N * C), Widened(qkv, 3 * N * C), Widened(out, N * C), lse,
                                    cu_seqlens, n_seq, N, H, D);
  }
  void attention_linear_forward(bf16* out, float* state_out, const bf16* qkv, const float* slopes,
                                const float* state_in, const int32_t* cu_seqlens, int n_seq, int64_t N, int H, int D,
                                int chunk) override {
    const int64_t C = int64_t{H} * D;
    Narrowed o(out, N * C, Narrowed::overwrite);
    cpu::attention_linear_forward(o, state_out, Widened(qkv, 3 * N * C), slopes, state_in, cu_seqlens, n_seq, N, H,
                                  D, chunk);
  }
  void attention_linear_backward(bf16* dqkv, float* dstate_in, const bf16* dout, const float* dstate_out,
                                 const bf16* qkv, const float* slopes, const float* state_in,
                                 const int32_t* cu_seqlens, int n_seq, int64_t N, int H, int D, int chunk) override {
    const int64_t C = int64_t{H} * D;
    Narrowed d(dqkv, 3 * N * C, Narrowed::accumulate);
    cpu::attention_linear_backward(d, dstate_in, Widened(dout, N * C), dstate_out, Widened(qkv, 3 * N * C), slopes,
                                   state_in, cu_seqlens, n_seq, N, H, D, chunk);
  }
  void crossentropy_forward(float* losses, const bf16* logits, const int32_t* targets, int64_t N, int V) override {
    cpu::crossentropy_forward(losses, Widened(logits, N * V), targets, N, V);
  }
  void crossentropy_fused_backward(float* losses, bf16* logits_to_dlogits, const int32_t* targets,
                                   const float* weight, int64_t N, int V) override {
    Narrowed l(logits_to_dlogits, N * V, Narrowed::accumulate);  // the logits in, their gradient out
    cpu::crossentropy_fused_backward(losses, l, targets, weight, N, V);
  }

  void adamw_update(float* params, const float* grads, float* m, float* v, int64_t n, const AdamWStep& step,
                    float grad_scale) override {
    cpu::adamw_update(params, grads, m, v, n, step, grad_scale);
  }
  double squared_norm(const float* x, int64_t n) override { return cpu::squared_norm(x, n); }
  void scale(float* x, int64_t n, float s) override { cpu::scale(x, n, s); }
};

}  // namespace

Backend& cpu_backend() {
  static CpuBackend backend;
  return backend;
}

}  // namespace trident
