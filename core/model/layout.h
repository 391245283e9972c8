#pragma once
// Every parameter of the GPT in one flat fp32 buffer, in this order (core/model/README.md has the table):
//   transformer.wte.weight (V, C)         transformer.wpe.weight (P, C)   [with softmax layers only]
//   per layer l: ln_1.weight (C), ln_1.bias (C), attn.c_attn.weight (C, 3C), attn.c_attn.bias (3C),
//                attn.c_gate.weight (C, C), attn.c_gate.bias (C)   [linear layers with model.linear.output_gate]
//                attn.c_proj.weight (C, C), attn.c_proj.bias (C), ln_2.weight (C), ln_2.bias (C),
//                mlp.c_fc.weight (C, 4C), mlp.c_fc.bias (4C), mlp.c_proj.weight (4C, C), mlp.c_proj.bias (C)
//   transformer.ln_f.weight (C), transformer.ln_f.bias (C)
// Gradients and AdamW moments use the same layout, so optimizer, grad norm, all-reduce and checkpoints walk one
// array. The list drives initialisation, weight decay groups and safetensors names.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/config/config.h"

namespace trident {

// A range of the flat buffer, in floats: what a rank's optimizer owns under sharding (parallel/zero/).
struct FlatRange {
  int64_t offset = 0;
  int64_t numel = 0;
  bool operator==(const FlatRange&) const = default;
};

struct ParamEntry {
  std::string name;            // Hugging Face GPT-2 name
  std::vector<int64_t> shape;
  int64_t offset = 0;          // in floats, into the flat buffer
  int64_t numel = 0;
  bool decay = false;          // AdamW weight decay applies (matrices and embeddings, not biases or norms)
  float init_std = 0.0f;       // N(0, init_std); 0 means constant init_value
  float init_value = 0.0f;
};

// Offsets of one block's tensors in the flat buffer (gate_w and gate_b are -1 when the block has no output gate).
struct BlockOffsets {
  int64_t ln1_w, ln1_b, qkv_w, qkv_b, gate_w = -1, gate_b = -1, attproj_w, attproj_b, ln2_w, ln2_b, fc_w, fc_b,
      fcproj_w, fcproj_b;
};

struct ModelLayout {
  std::vector<ParamEntry> params;
  int64_t wte = 0, wpe = -1;  // wpe is -1 without softmax layers
  std::vector<BlockOffsets> blocks;
  int64_t lnf_w = 0, lnf_b = 0;
  int64_t num_params = 0;
};

ModelLayout model_layout(const ModelConfig& config);

// Contiguous ranges {offset, numel} of the flat gradient in the order backward finishes them: ln_f, the blocks from
// last to first, then the embeddings. Data parallelism reduces them in this order on every rank.
std::vector<std::pair<int64_t, int64_t>> gradient_buckets(const ModelLayout& layout);

}  // namespace trident
