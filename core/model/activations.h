#pragma once
// Saved activations of a forward pass, sized for at most `max_tokens` tokens, carved from one allocation
// (llm.c style: the whole activation memory can be read off this file). N below is the batch's token count.
#include <cstdint>
#include <vector>

#include "core/config/config.h"
#include "core/tensor/tensor.h"

namespace trident {

struct LayerActivations {
  float* ln1;        // (N, C)  ln_1 output
  float* ln1_mean;   // (N)
  float* ln1_rstd;   // (N)
  float* qkv;        // (N, 3C)
  float* att;        // (N, C)  attention output fed to attn.c_proj
  float* lse;        // (H, N)  softmax: log-sum-exp per query row
  float* o;          // (N, C)  linear: attention output before the per-head RMSNorm
  float* rrms;       // (N, H)  linear: 1/rms of each head's output
  float* res2;       // (N, C)  residual stream after attention
  float* ln2;        // (N, C)
  float* ln2_mean;   // (N)
  float* ln2_rstd;   // (N)
  float* fc;         // (N, 4C) mlp.c_fc output (GELU input)
  float* gelu;       // (N, 4C)
  float* res3;       // (N, C)  residual stream after the MLP: the next layer's input
};

struct Activations {
  float* encoded;    // (N, C)  embeddings: layer 0's input
  std::vector<LayerActivations> layers;
  float* lnf;        // (N, C)
  float* lnf_mean;   // (N)
  float* lnf_rstd;   // (N)
  // Backward scratch, reused by every layer.
  float* dres;       // (N, C)  gradient of the residual stream
  float* dnarrow;    // (N, C)
  float* dwide1;     // (N, 4C)
  float* dwide2;     // (N, 4C)
  // LM head: logits of one chunk of tokens at a time, and per-token losses and weights.
  float* logits;     // (kHeadChunk, V)
  float* losses;     // (N)
  float* loss_weight;// (N)
  Tensor storage;
};

constexpr int64_t kHeadChunk = 128;  // tokens per LM-head chunk: logits stay O(chunk x V), not O(N x V)

Activations allocate_activations(const ModelConfig& config, int64_t max_tokens, Allocator& allocator);

}  // namespace trident
