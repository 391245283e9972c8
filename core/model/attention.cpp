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

template <class T>
void Attention::forward(LayerActivations<T>& l, const TokenBatch& b) const {
  constexpr bool fp32 = std::is_same_v<T, float>;
  TRIDENT_CHECK(fp32 || !op_, "a sequence-parallel attention op needs fp32 activations");
  if (!linear_) {
    if constexpr (fp32) {
      if (op_) return op_->forward(l.att, l.lse, l.qkv, nullptr, 0, b);
    }
    backend_->attention_softmax_forward(l.att, l.lse, l.qkv, b.cu_seqlens, b.num_sequences, b.num_tokens, H_, D_);
    return;
  }
  const float* slopes = slopes_on_backend_.data<float>();
  if constexpr (fp32) {
    if (op_) op_->forward(l.o, nullptr, l.qkv, slopes, chunk_, b);
  }
  if (!op_)  // always the case with bf16 (checked above)
    backend_->attention_linear_forward(l.o, nullptr, l.qkv, slopes, nullptr, b.cu_seqlens, b.num_sequences,
                                       b.num_tokens, H_, D_, chunk_);
  backend_->rmsnorm_forward(l.att, l.rrms, l.o, b.num_tokens * H_, D_);
}

template <class T>
void Attention::backward(T* dqkv, const T* datt, T* scratch, const LayerActivations<T>& l, const TokenBatch& b) const {
  constexpr bool fp32 = std::is_same_v<T, float>;
  TRIDENT_CHECK(fp32 || !op_, "a sequence-parallel attention op needs fp32 activations");
  if (!linear_) {
    if constexpr (fp32) {
      if (op_) return op_->backward(dqkv, datt, l.qkv, l.att, l.lse);
    }
    backend_->attention_softmax_backward(dqkv, datt, l.qkv, l.att, l.lse, b.cu_seqlens, b.num_sequences, b.num_tokens,
                                         H_, D_);
    return;
  }
  T* d_o = scratch;
  backend_->fill(d_o, b.num_tokens * H_ * D_, 0.0f);
  backend_->rmsnorm_backward(d_o, datt, l.o, l.rrms, b.num_tokens * H_, D_);
  if constexpr (fp32) {
    if (op_) return op_->backward(dqkv, d_o, l.qkv, l.o, nullptr);
  }
  backend_->attention_linear_backward(dqkv, nullptr, d_o, nullptr, l.qkv, slopes_on_backend_.data<float>(), nullptr,
                                      b.cu_seqlens, b.num_sequences, b.num_tokens, H_, D_, chunk_);
}

template void Attention::forward<float>(LayerActivations<float>&, const TokenBatch&) const;
template void Attention::forward<bf16>(LayerActivations<bf16>&, const TokenBatch&) const;
template void Attention::backward<float>(float*, const float*, float*, const LayerActivations<float>&,
                                         const TokenBatch&) const;
template void Attention::backward<bf16>(bf16*, const bf16*, bf16*, const LayerActivations<bf16>&,
                                        const TokenBatch&) const;

}  // namespace trident
