#include "core/model/attention.h"

#include <algorithm>
#include <type_traits>

#include "kernels/common/error.h"
#include "kernels/shared/decay.h"

namespace trident {

namespace {

FeatureMap feature_map_named(const std::string& name) {
  if (name == "silu") return FeatureMap::silu;
  if (name == "elu1") return FeatureMap::elu1;
  if (name == "none") return FeatureMap::none;
  throw_config_error("model.linear.qk_activation: '{}' is not one of silu, elu1, none", name);
}

}  // namespace

Attention::Attention(const ModelConfig& config, int layer, Backend& backend, Allocator& allocator,
                     std::shared_ptr<WideActivations> wide)
    : backend_(&backend),
      layer_(layer),
      linear_(config.linear_layer(layer)),
      H_(static_cast<int>(config.n_head)),
      D_(static_cast<int>(config.n_embd / config.n_head)),
      chunk_(static_cast<int>(config.linear_chunk)),
      wide_(std::move(wide)) {
  if (linear_) {
    feature_map_ = feature_map_named(config.linear_qk_activation);
    norm_per_head_ = config.linear_output_norm == "head";
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

// ---- the block -----------------------------------------------------------------------------------------------------

template <class T>
void Attention::forward(LayerActivations<T>& l, const TokenBatch& b) const {
  if (!linear_) return attend(l.att, l.lse, l.qkv, b);
  const int64_t N = b.num_tokens;
  if (feature_map_ != FeatureMap::none) backend_->feature_map_forward(l.qkv, l.qk_pre, N, H_ * D_, feature_map_);
  attend(l.o, nullptr, l.qkv, b);
  backend_->rmsnorm_forward(l.att, l.rrms, l.o, l.gate, norm_rows(N), norm_width());
}

template <class T>
void Attention::backward(T* dqkv, T* dgate, const T* datt, T* scratch, const LayerActivations<T>& l,
                         const TokenBatch& b) const {
  if (!linear_) return attend_backward(dqkv, datt, l, b);
  const int64_t N = b.num_tokens;
  T* d_o = scratch;  // the gradient entering the attention kernel (or op)
  backend_->fill(d_o, N * H_ * D_, 0.0f);
  backend_->rmsnorm_backward(d_o, dgate, datt, l.o, l.gate, l.rrms, norm_rows(N), norm_width());
  attend_backward(dqkv, d_o, l, b);
  if (feature_map_ != FeatureMap::none) backend_->feature_map_backward(dqkv, l.qk_pre, N, H_ * D_, feature_map_);
}

// ---- the attention itself: the local kernel, or the op -------------------------------------------------------------

template <class T>
void Attention::attend(T* out, float* lse, const T* qkv, const TokenBatch& b) const {
  const float* slopes = linear_ ? slopes_on_backend_.data<float>() : nullptr;
  if (AttentionOp* group = op(b)) {
    auto* typed = entry(*group, qkv);
    if constexpr (std::is_same_v<T, bf16>)
      if (typed == nullptr) return attend_widened(*group, out, lse, qkv, b);
    return typed->forward(out, lse, qkv, slopes, linear_ ? chunk_ : 0, b);
  }
  if (!linear_) {
    backend_->attention_softmax_forward(out, lse, qkv, b.cu_seqlens, b.num_sequences, b.num_tokens, H_, D_);
    return;
  }
  backend_->attention_linear_forward(out, nullptr, qkv, slopes, nullptr, b.cu_seqlens, b.num_sequences, b.num_tokens,
                                     H_, D_, chunk_);
}

template <class T>
void Attention::attend_backward(T* dqkv, const T* dout, const LayerActivations<T>& l, const TokenBatch& b) const {
  if (AttentionOp* group = op(b)) {
    auto* typed = entry(*group, l.qkv);
    if constexpr (std::is_same_v<T, bf16>)
      if (typed == nullptr) return attend_backward_widened(*group, dqkv, dout, l, b);
    return typed->backward(dqkv, dout, l.qkv, linear_ ? l.o : l.att, linear_ ? nullptr : l.lse);
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
void Attention::attend_widened(AttentionOp& op, bf16* out, float* lse, const bf16* qkv, const TokenBatch& b) const {
  TRIDENT_CHECK(wide_ != nullptr, "a sequence-parallel op on bf16 activations needs fp32 copies (WideActivations)");
  const int64_t N = b.num_tokens, C = int64_t(H_) * D_;
  float* qkv32 = wide_->qkv.data(3 * N * C);
  float* out32 = wide_->out.data(N * C);
  backend_->convert(qkv32, qkv, 3 * N * C);
  op.forward(out32, lse, qkv32, linear_ ? slopes_on_backend_.data<float>() : nullptr, linear_ ? chunk_ : 0, b);
  backend_->convert(out, out32, N * C);
}

// Widens again what forward widened (the copies are shared by the layers), and the gradient accumulated so far.
void Attention::attend_backward_widened(AttentionOp& op, bf16* dqkv, const bf16* dout,
                                        const LayerActivations<bf16>& l, const TokenBatch& b) const {
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
  op.backward(dqkv32, dout32, qkv, out, linear_ ? nullptr : l.lse);
  backend_->convert(dqkv, dqkv32, 3 * N * C);
}

template void Attention::forward<float>(LayerActivations<float>&, const TokenBatch&) const;
template void Attention::forward<bf16>(LayerActivations<bf16>&, const TokenBatch&) const;
template void Attention::backward<float>(float*, float*, const float*, float*, const LayerActivations<float>&,
                                         const TokenBatch&) const;
template void Attention::backward<bf16>(bf16*, bf16*, const bf16*, bf16*, const LayerActivations<bf16>&,
                                        const TokenBatch&) const;

}  // namespace trident
