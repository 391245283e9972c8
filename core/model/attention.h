#pragma once
// The attention sublayer between attn.c_attn and attn.c_proj: qkv (N, 3C) -> att (N, C), both attention types.
//   softmax: causal softmax attention per sequence, scale 1/sqrt(D)
//   linear:  chunked linear attention with per-head decay per sequence, then a per-head RMSNorm (NormAttention)
#include <vector>

#include "core/config/config.h"
#include "core/model/activations.h"
#include "core/model/batch.h"
#include "core/tensor/tensor.h"
#include "kernels/backend.h"

namespace trident {

class Attention {
 public:
  // Linear attention keeps its decay slopes in the backend's memory, taken from `allocator`.
  Attention(const ModelConfig& config, int layer, Backend& backend, Allocator& allocator);

  // Reads layer.qkv, writes layer.att (and layer.lse, or layer.o and layer.rrms).
  void forward(LayerActivations& layer, const TokenBatch& batch) const;
  // dqkv (N, 3C) += d att / d qkv applied to datt. `scratch` (N, C) is overwritten.
  void backward(float* dqkv, const float* datt, float* scratch, const LayerActivations& layer,
                const TokenBatch& batch) const;

  const std::vector<float>& slopes() const { return slopes_; }  // linear attention only (host copy)

 private:
  Backend* backend_;
  bool linear_;
  int H_, D_, chunk_;
  std::vector<float> slopes_;
  Tensor slopes_on_backend_;
};

}  // namespace trident
