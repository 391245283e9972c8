#include "core/model/attention.h"

#include <algorithm>

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

void Attention::forward(LayerActivations& l, const TokenBatch& b) const {
  if (!linear_) {
    if (op_)
      op_->forward(l.att, l.lse, l.qkv, nullptr, 0, b);
    else
      backend_->attention_softmax_forward(l.att, l.lse, l.qkv, b.cu_seqlens, b.num_sequences, b.num_tokens, H_, D_);
    return;
  }
  if (op_)
    op_->forward(l.o, nullptr, l.qkv, slopes_on_backend_.data<float>(), chunk_, b);
  else
    backend_->attention_linear_forward(l.o, nullptr, l.qkv, slopes_on_backend_.data<float>(), nullptr, b.cu_seqlens,
                                       b.num_sequences, b.num_tokens, H_, D_, chunk_);
  backend_->rmsnorm_forward(l.att, l.rrms, l.o, b.num_tokens * H_, D_);
}

void Attention::backward(float* dqkv, const float* datt, float* scratch, const LayerActivations& l,
                         const TokenBatch& b) const {
  if (!linear_) {
    if (op_) {
      op_->backward(dqkv, datt, l.qkv, l.att, l.lse);
      return;
    }
    backend_->attention_softmax_backward(dqkv, datt, l.qkv, l.att, l.lse, b.cu_seqlens, b.num_sequences, b.num_tokens,
                                         H_, D_);
    return;
  }
  float* d_o = scratch;
  backend_->fill(d_o, b.num_tokens * H_ * D_, 0.0f);
  backend_->rmsnorm_backward(d_o, datt, l.o, l.rrms, b.num_tokens * H_, D_);
  if (op_)
    op_->backward(dqkv, d_o, l.qkv, l.o, nullptr);
  else
    backend_->attention_linear_backward(dqkv, nullptr, d_o, nullptr, l.qkv, slopes_on_backend_.data<float>(), nullptr,
                                        b.cu_seqlens, b.num_sequences, b.num_tokens, H_, D_, chunk_);
}

}  // namespace trident
