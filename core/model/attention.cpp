#include "core/model/attention.h"

#include <algorithm>
#include <type_traits>

#include "core/common/error.h"
#include "kernels/shared/decay.h"

namespace trident {

Attention::Attention(const ModelConfig& config, int layer, Backend& backend, Allocator& allocator)
    : backend_(&backend),
      linear_(config.attention == "linear"),
      H_(static_cast<int>(config.n_head)),
      D_(static_cast<int>(config.n_embd / config.n_head)),
      chunk_(static_cast<int>(config.linear_chunk)) {
  if (linear_) {
    slopes_ = config.decay_layer_scaling ? linear_attention_slopes(H_, layer, static_cast<int>(config.n_layer))
                                         : linear_attention_slopes(H_);
    slopes_on_backend_ = Tensor::empty(allocator, {H_});
    backend.upload(slopes_on_backend_.raw(), slopes_.data(), slopes_on_backend_.nbytes());
  }
}

namespace {

// The op's entry point for activations of type T (nullptr: a bf16 op that computes on fp32 copies).
AttentionOp* entry(AttentionOp& op, const float*) { return &op; }
Bf16AttentionOp* entry(AttentionOp& op, const bf16*) { return op.bf16_entry(); }

}  // namespace

template <class T>
void Attention::forward(LayerActivations<T>& l, const TokenBatch& b) const {
  if (op_) {
    auto* op = entry(*op_, l.qkv);
    if constexpr (std::is_same_v<T, bf16>)
      if (op == nullptr) return forward_widened(l, b);
    if (!linear_) return op->forward(l.att, l.lse, l.qkv, nullptr, 0, b);
    op->forward(l.o, nullptr, l.qkv, slopes_on_backend_.data<float>(), chunk_, b);
    return backend_->rmsnorm_forward(l.att, l.rrms, l.o, b.num_tokens * H_, D_);
  }
  if (!linear_) {
    backend_->attention_softmax_forward(l.att, l.lse, l.qkv, b.cu_seqlens, b.num_sequences, b.num_tokens, H_, D_);
    return;
  }
  backend_->attention_linear_forward(l.o, nullptr, l.qkv, slopes_on_backend_.data<float>(), nullptr, b.cu_seqlens,
                                     b.num_sequences, b.num_tokens, H_, D_, chunk_);
  backend_->rmsnorm_forward(l.att, l.rrms, l.o, b.num_tokens * H_, D_);
}

template <class T>
void Attention::backward(T* dqkv, const T* datt, T* scratch, const LayerActivations<T>& l, const TokenBatch& b) const {
  const T* dout = datt;  // the gradient entering the attention kernel (or op)
  if (linear_) {
    T* d_o = scratch;
    backend_->fill(d_o, b.num_tokens * H_ * D_, 0.0f);
    backend_->rmsnorm_backward(d_o, datt, l.o, l.rrms, b.num_tokens * H_, D_);
    dout = d_o;
  }
  if (op_) {
    auto* op = entry(*op_, l.qkv);
    if constexpr (std::is_same_v<T, bf16>)
      if (op == nullptr) return backward_widened(dqkv, dout, l, b);
    return op->backward(dqkv, dout, l.qkv, linear_ ? l.o : l.att, linear_ ? nullptr : l.lse);
  }
  if (!linear_) {
    backend_->attention_softmax_backward(dqkv, dout, l.qkv, l.att, l.lse, b.cu_seqlens, b.num_sequences, b.num_tokens,
                                         H_, D_);
    return;
  }
  backend_->attention_linear_backward(dqkv, nullptr, dout, nullptr, l.qkv, slopes_on_backend_.data<float>(), nullptr,
                                      b.cu_seqlens, b.num_sequences, b.num_tokens, H_, D_, chunk_);
}

// The op between exact widenings of its bf16 inputs and one rounding of each output: the arithmetic of the bf16
// kernels (bf16 in, fp32 inside, bf16 out), with fp32 messages.
void Attention::forward_widened(LayerActivations<bf16>& l, const TokenBatch& b) const {
  TRIDENT_CHECK(wide_ != nullptr, "a sequence-parallel op on bf16 activations needs fp32 copies (WideActivations)");
  const int64_t N = b.num_tokens, C = int64_t(H_) * D_;
  float* qkv = wide_->qkv.data(3 * N * C);
  float* out = wide_->out.data(N * C);
  backend_->convert(qkv, l.qkv, 3 * N * C);
  if (!linear_) {
    op_->forward(out, l.lse, qkv, nullptr, 0, b);
    backend_->convert(l.att, out, N * C);
    return;
  }
  op_->forward(out, nullptr, qkv, slopes_on_backend_.data<float>(), chunk_, b);
  backend_->convert(l.o, out, N * C);
  backend_->rmsnorm_forward(l.att, l.rrms, l.o, N * H_, D_);
}

// Widens again what forward widened (the copies are shared by the layers), and the gradient accumulated so far.
void Attention::backward_widened(bf16* dqkv, const bf16* dout, const LayerActivations<bf16>& l,
                                 const TokenBatch& b) const {
  TRIDENT_CHECK(wide_ != nullptr, "a sequence-parallel op on bf16 activations needs fp32 copies (WideActivations)");
  const int64_t N = b.num_tokens, C = int64_t(H_) * D_;
  float* qkv = wide_->qkv.data(3 * N * C);
  float* out = wide_->out.data(N * C);
  float* dout32 = wide_->dout.data(N * C);
  float* dqkv32 = wide_->dqkv.data(3 * N * C);
  backend_->convert(qkv, l.qkv, 3 * N * C);
  backend_->convert(out, linear_ ? l.o : l.att, N * C);
  backend_->convert(dout32, dout, N * C);
  backend_->convert(dqkv32, dqkv, 3 * N * C);
  op_->backward(dqkv32, dout32, qkv, out, linear_ ? nullptr : l.lse);
  backend_->convert(dqkv, dqkv32, 3 * N * C);
}

template void Attention::forward<float>(LayerActivations<float>&, const TokenBatch&) const;
template void Attention::forward<bf16>(LayerActivations<bf16>&, const TokenBatch&) const;
template void Attention::backward<float>(float*, const float*, float*, const LayerActivations<float>&,
                                         const TokenBatch&) const;
template void Attention::backward<bf16>(bf16*, const bf16*, bf16*, const LayerActivations<bf16>&,
                                        const TokenBatch&) const;

}  // namespace trident
