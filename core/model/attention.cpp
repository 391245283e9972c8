#include "core/model/attention.h"

#include <algorithm>

#include "kernels/cpu/attention_linear.h"
#include "kernels/cpu/attention_softmax.h"
#include "kernels/cpu/rmsnorm.h"
#include "kernels/shared/decay.h"

namespace trident {

Attention::Attention(const ModelConfig& config, int layer)
    : linear_(config.attention == "linear"),
      H_(static_cast<int>(config.n_head)),
      D_(static_cast<int>(config.n_embd / config.n_head)),
      chunk_(static_cast<int>(config.linear_chunk)) {
  if (linear_) {
    slopes_ = config.decay_layer_scaling ? linear_attention_slopes(H_, layer, static_cast<int>(config.n_layer))
                                         : linear_attention_slopes(H_);
  }
}

void Attention::forward(LayerActivations& l, const TokenBatch& b) const {
  if (!linear_) {
    cpu::attention_softmax_forward(l.att, l.lse, l.qkv, b.cu_seqlens, b.num_sequences, b.num_tokens, H_, D_);
    return;
  }
  cpu::attention_linear_forward(l.o, nullptr, l.qkv, slopes_.data(), nullptr, b.cu_seqlens, b.num_sequences,
                                b.num_tokens, H_, D_, chunk_);
  cpu::rmsnorm_forward(l.att, l.rrms, l.o, b.num_tokens * H_, D_);
}

void Attention::backward(float* dqkv, const float* datt, float* scratch, const LayerActivations& l,
                         const TokenBatch& b) const {
  if (!linear_) {
    cpu::attention_softmax_backward(dqkv, datt, l.qkv, l.att, l.lse, b.cu_seqlens, b.num_sequences, b.num_tokens, H_,
                                    D_);
    return;
  }
  float* d_o = scratch;
  std::fill(d_o, d_o + b.num_tokens * H_ * D_, 0.0f);
  cpu::rmsnorm_backward(d_o, datt, l.o, l.rrms, b.num_tokens * H_, D_);
  cpu::attention_linear_backward(dqkv, nullptr, d_o, nullptr, l.qkv, slopes_.data(), nullptr, b.cu_seqlens,
                                 b.num_sequences, b.num_tokens, H_, D_, chunk_);
}

}  // namespace trident
