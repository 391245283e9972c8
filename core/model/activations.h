#pragma once
// Saved activations of a forward pass, sized for at most `max_tokens` tokens, carved from one allocation
// (llm.c style: the whole activation memory can be read off this file). N below is the batch's token count.
// T is the storage type of the activations (float, or bf16 with train.precision: bf16); norm statistics, lse, the
// per-token losses and loss weights are always fp32.
#include <cstdint>
#include <vector>

#include "core/config/config.h"
#include "core/tensor/tensor.h"

namespace trident {

template <class T>
struct LayerActivations {
  T* ln1;            // (N, C)  ln_1 output
  float* ln1_mean;   // (N)
  float* ln1_rstd;   // (N)
  T* qkv;            // (N, 3C) [q | k | v]; linear: q and k after the feature map
  T* qk_pre;         // (N, 2C) linear with a feature map: q and k before it
  T* gate;           // (N, C)  linear with an output gate: attn.c_gate output
  T* att;            // (N, C)  attention output fed to attn.c_proj
  float* lse;        // (H, N)  softmax: log-sum-exp per query row
  T* o;              // (N, C)  linear: attention output before the output norm (and gate)
  float* rrms;       // (N) linear: 1/rms of each token's output ((N, H) with the internal per-head norm)
  T* res2;           // (N, C)  residual stream after attention
  T* ln2;            // (N, C)
  float* ln2_mean;   // (N)
  float* ln2_rstd;   // (N)
  T* fc;             // (N, 4C) mlp.c_fc output (GELU input)
  T* gelu;           // (N, 4C)
  T* res3;           // (N, C)  residual stream after the MLP: the next layer's input
};

template <class T>
struct Activations {
  T* encoded;        // (N, C)  embeddings: layer 0's input
  std::vector<LayerActivations<T>> layers;
  T* lnf;            // (N, C)
  float* lnf_mean;   // (N)
  float* lnf_rstd;   // (N)
  // Backward scratch, reused by every layer.
  T* dres;           // (N, C)  gradient of the residual stream
  T* dnarrow;        // (N, C)
  T* dwide1;         // (N, 4C)
  T* dwide2;         // (N, 4C)
  // LM head: logits of one chunk of tokens at a time, and per-token losses and weights.
  T* logits;         // (kHeadChunk, V)
  float* losses;     // (N)
  float* loss_weight;// (N)
  // A runner's own values in the same storage (the spare of allocate_activations; train.recompute: auto: its layers'
  // checkpoints), nullptr without.
  T* spare;
  Tensor storage;
};

constexpr int64_t kHeadChunk = 128;  // tokens per LM-head chunk: logits stay O(chunk x V), not O(N x V)

// An array a layer saved for its backward: a batch of n tokens wrote its first n * bytes_per_token bytes. A swapped
// model that offloads activations moves these to host memory and back instead of recomputing them.
struct SavedArray {
  void* data = nullptr;
  int64_t bytes_per_token = 0;
};
// The arrays of layer `index`, whose activations `layer` holds.
template <class T>
std::vector<SavedArray> saved_arrays(const LayerActivations<T>& layer, const ModelConfig& config, int64_t index);
// The bytes a token of a layer's slot takes: the most any layer saves.
template <class T>
int64_t saved_bytes_per_token(const ModelConfig& config);

// `selective` (train.recompute: selective): the layers' norm and GELU outputs (ln1, ln2, gelu) share one slot, which
// each layer's forward writes and its backward writes again before reading it; the rest stays a layer's own.
// `spare`: values of type T after everything else (Activations::spare).
template <class T>
Activations<T> allocate_activations(const ModelConfig& config, int64_t max_tokens, Allocator& allocator,
                                    bool selective = false, int64_t spare = 0);
// The bytes allocate_activations takes from its allocator.
template <class T>
int64_t activation_bytes(const ModelConfig& config, int64_t max_tokens, bool selective = false, int64_t spare = 0);
// Carves `a`'s arrays again, for `config.n_layer` layers and batches of `max_tokens` tokens, out of the storage it
// already has (which must hold activation_bytes of them): a runner that changes per pass how many layers keep their
// arrays (train.recompute: auto).
template <class T>
void recarve_activations(Activations<T>& a, const ModelConfig& config, int64_t max_tokens, bool selective,
                         int64_t spare);

}  // namespace trident
